"""The seal outlives its session for the threads the replay started (NEWCOMER2 finding 4).

A thread the agent starts during a frozen replay and that sends after the session ended went live under
the Python API and exported tests. Now: the session waits for the non-daemon threads it started (their
refusal is its divergence); a daemon thread, or work handed to a pool, that sends after the session ended
is refused all the same, noted as a late refusal and warned; a thread the replay did not start is free
once the session ends. A thread waits for an event the test sets, so "after the session" is exact; the one
the replay waits for sends a moment after the entrypoint returned, as the agent's notification does.
"""

from __future__ import annotations

import concurrent.futures
import http.server
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepfork.replay import ReplaySession, replay_entrypoint
from stepfork.replay.network import is_sealed
from stepfork.replay.network_children import NetworkSealWarning

from ..e2e.conftest import counting_server
from .seal_peers import lookup, recorded_run


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    with counting_server() as srv:
        yield srv


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return recorded_run(tmp_path)


def url(server: http.server.ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/notify"


def send_when(event: threading.Event, target: str, outcome: dict[str, str], wait: bool = True) -> None:
    """A fire-and-forget notification: waits for ``event`` (unless not ``wait``), then sends; notes how it
    ended."""
    if wait:
        event.wait(30)
    try:
        # HTTP written on a socket: no capture sees it (urllib.request and http.client are captured where
        # autocapture.enable() ran in the worker), so only the seal stands in its way
        parts = urllib.parse.urlsplit(target)
        with socket.create_connection((parts.hostname or "", parts.port or 80), timeout=5) as sock:
            sock.sendall(f"GET {parts.path} HTTP/1.0\r\nHost: {parts.netloc}\r\n\r\n".encode())
            while sock.recv(4096):  # the server answers and closes (HTTP/1.0)
                pass
        outcome["sent"] = "yes"
    except Exception as exc:
        outcome["sent"] = type(exc).__name__


def release(event: threading.Event, waited: threading.Thread | concurrent.futures.Future[None]) -> None:
    """Let the thread send now (the session has ended), and wait until it has."""
    event.set()
    if isinstance(waited, threading.Thread):
        waited.join(30)
    else:
        waited.result(30)


def test_the_replay_waits_for_the_threads_it_started_and_their_refusal_is_the_verdict(
    bundle: Path, server: http.server.ThreadingHTTPServer
) -> None:
    outcome: dict[str, str] = {}

    def notify() -> None:
        time.sleep(0.05)  # the agent's fire-and-forget notification goes a moment after it returned
        send_when(threading.Event(), url(server), outcome, wait=False)

    def agent() -> str:
        result = lookup("Paris")
        threading.Thread(target=notify).start()
        return result

    report = replay_entrypoint(bundle, agent)
    assert (report.matching.status, report.matching.code) == ("DIVERGED", "network_sealed"), report.matching
    assert outcome == {"sent": "ReplayPolicyError"}
    assert server.hits == 0  # type: ignore[attr-defined]


def test_a_daemon_thread_the_replay_started_is_refused_after_the_session_ended(
    bundle: Path, server: http.server.ThreadingHTTPServer
) -> None:
    go = threading.Event()
    outcome: dict[str, str] = {}
    with ReplaySession.from_trace(bundle) as session:
        lookup("Paris")
        thread = threading.Thread(target=send_when, args=(go, url(server), outcome), daemon=True)
        thread.start()
    assert session.divergence is None  # the verdict was taken: the daemon had sent nothing yet
    late = "after the replay ended, a thread it started was refused"
    with pytest.warns(NetworkSealWarning, match=late) as told:
        release(go, thread)
    (warning,) = [w for w in told if issubclass(w.category, NetworkSealWarning)]
    line = str(warning.message)
    assert f"the connection to 127.0.0.1:{server.server_address[1]} was refused; nothing was sent" in line
    assert "instrument" not in line  # the run's advice is not for a library's exit-time work (NEWCOMER3 10)
    assert outcome == {"sent": "ReplayPolicyError"}
    assert [error.code for error in session.late_refusals] == ["network_sealed"]
    assert server.hits == 0  # type: ignore[attr-defined]
    assert not is_sealed()


def test_work_handed_to_a_pool_is_sealed_but_not_waited_for(
    bundle: Path, server: http.server.ThreadingHTTPServer
) -> None:
    """A pool's worker waits for work until its pool shuts down: the session does not wait for it (it would
    never end), and the work it was given during the replay stays sealed."""
    go = threading.Event()
    outcome: dict[str, str] = {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    with ReplaySession.from_trace(bundle) as session:
        lookup("Paris")
        future = pool.submit(send_when, go, url(server), outcome)
    with pytest.warns(NetworkSealWarning):
        release(go, future)
    pool.shutdown()
    assert outcome == {"sent": "ReplayPolicyError"}
    assert len(session.late_refusals) == 1
    assert server.hits == 0  # type: ignore[attr-defined]


def test_a_thread_the_replay_did_not_start_is_free_once_the_session_ends(
    bundle: Path, server: http.server.ThreadingHTTPServer
) -> None:
    go = threading.Event()
    outcome: dict[str, str] = {}
    thread = threading.Thread(target=send_when, args=(go, url(server), outcome), daemon=True)
    thread.start()  # a library's background thread, started before the replay
    late = threading.Event()
    late_outcome: dict[str, str] = {}
    with ReplaySession.from_trace(bundle) as session:
        lookup("Paris")
        replays = threading.Thread(target=send_when, args=(late, url(server), late_outcome), daemon=True)
        replays.start()
    go.set()
    thread.join(30)
    assert outcome == {"sent": "yes"}  # the replay's seal holds only its own threads now
    with pytest.warns(NetworkSealWarning):
        release(late, replays)
    assert late_outcome == {"sent": "ReplayPolicyError"}
    assert session.divergence is None
    assert server.hits == 1  # type: ignore[attr-defined]
