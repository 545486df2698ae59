"""``stepfork.replay.network.seal_process``: a process that only replays frozen (a ``check`` worker and the
zygote it is forked from) is sealed for the rest of its life. The hooks stay installed across sessions
instead of being installed and removed around each one; each session still adds its ``allow_hosts`` and
still records a refusal as its own divergence.

Sealing is for good, so every case runs in a fresh interpreter, never in this test process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from stepfork.trace import record, trace_tool

REMOTE = "192.0.2.10"  # TEST-NET-1 (RFC 5737): never routed


@trace_tool
def lookup(city: str) -> str:
    return f"{city}: sunny"


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    path = tmp_path / "run.sftrace"
    with record("net", output=path):
        lookup("Paris")
    return path


PRELUDE = """
import json, socket, sys, threading
from stepfork.replay import ReplayPolicyError, ReplaySession
from stepfork.replay import network
from stepfork.trace import trace_tool

@trace_tool
def lookup(city):
    return city

def refused(address):
    try:
        socket.create_connection(address, timeout=5).close()
    except ReplayPolicyError as exc:
        return exc.code
    except OSError as exc:  # let through by the seal; the unrouted address then fails in the OS
        return "os:" + type(exc).__name__
    return "connected"

out = {}
"""


def run(script: str, bundle: Path) -> dict[str, Any]:
    """Run ``script`` (after :data:`PRELUDE`, with ``BUNDLE`` set) in a fresh interpreter; return the JSON
    dict ``out`` it printed."""
    values = f"BUNDLE = {str(bundle)!r}\nREMOTE = {REMOTE!r}\n"
    code = PRELUDE + values + textwrap.dedent(script) + "\nprint(json.dumps(out))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_the_hooks_stay_installed_across_sessions_and_between_them_nothing_is_reachable(
    bundle: Path,
) -> None:
    out = run(
        """
        plain = socket.socket.connect
        network.seal_process()
        hooked = socket.socket.connect
        out["installed"] = hooked is not plain
        installs = []
        real = network._hooks
        network._hooks = lambda: installs.append(1) or real()
        for _ in range(3):
            with ReplaySession.from_trace(BUNDLE) as session:
                lookup("Paris")
        out["installs_in_sessions"] = len(installs)
        out["still_installed"] = socket.socket.connect is hooked
        out["sealed_between"] = network.is_sealed()
        out["remote_between"] = refused((REMOTE, 443))
        out["divergence"] = session.divergence is None
        server = socket.create_server(("127.0.0.1", 0))
        out["loopback_between"] = refused(server.getsockname()[:2])
        server.close()
        """,
        bundle,
    )
    assert out == {
        "installed": True,
        "installs_in_sessions": 0,  # no session installs or removes a hook any more
        "still_installed": True,
        "sealed_between": True,
        "remote_between": "network_sealed",
        "divergence": True,  # a refusal outside any session is no session's divergence
        "loopback_between": "network_sealed",  # loopback is sealed like any address (issue 29)
    }


def test_a_sessions_allowed_host_is_still_let_through_and_only_while_it_runs(bundle: Path) -> None:
    out = run(
        f"""
        network.seal_process()
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.setblocking(False)
        with ReplaySession.from_trace(BUNDLE, allow_hosts=[{REMOTE!r}]) as session:
            out["allowed"] = isinstance(probe.connect_ex(({REMOTE!r}, 9)), int)
        probe.close()
        out["after"] = refused(({REMOTE!r}, 9))
        """,
        bundle,
    )
    assert out == {"allowed": True, "after": "network_sealed"}


def test_a_refusal_in_a_thread_the_sessions_context_did_not_reach_is_still_that_sessions_divergence(
    bundle: Path,
) -> None:
    """The process's own seal is the first one installed; a plain thread has no active session, and its
    refusal must still be recorded as the divergence of the session running (as without the process seal),
    so that ``check`` says DIVERGED."""
    out = run(
        f"""
        network.seal_process()
        with ReplaySession.from_trace(BUNDLE) as session:
            codes = []
            thread = threading.Thread(target=lambda: codes.append(refused(({REMOTE!r}, 443))))
            thread.start()
            thread.join()
        out["code"] = codes[0]
        out["divergence"] = getattr(session.divergence, "code", None)
        """,
        bundle,
    )
    assert out == {"code": "network_sealed", "divergence": "network_sealed"}


def test_a_later_call_installs_the_hooks_of_modules_loaded_since(bundle: Path) -> None:
    """The zygote calls it again after importing what replays imported lazily: a class that appeared since
    (here a stand-in for a transport class of a module loaded later) gets its hook then."""
    out = run(
        """
        class Late:
            def send(self):
                return "plain"

        network.seal_process()
        real = network._hooks
        network._hooks = lambda: real() + [(Late, "send", lambda self: "hooked")]
        out["before"] = Late().send()
        network.seal_process()
        out["after"] = Late().send()
        out["process_seals"] = sum(s.session is None for s in network._seals)
        """,
        bundle,
    )
    assert out == {"before": "plain", "after": "hooked", "process_seals": 1}


def test_a_process_sealed_for_life_still_reads_its_next_bundle_from_a_url(bundle: Path) -> None:
    """A ``stepfork check`` worker replays bundles that lie behind a URL (``s3://``, here fsspec's HTTP
    filesystem on 127.0.0.1): reading one is Stepfork's own traffic, let through while it is read; the
    replay that follows is sealed again, loopback included."""
    # fsspec's HTTP filesystem needs aiohttp: in the test environment with litellm (hatch.toml)
    out = run(
        f"""
        import functools, http.server, pathlib
        folder = pathlib.Path({str(bundle.parent)!r})
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
        handler.log_message = lambda *args: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        network.seal_process()
        url = f"http://127.0.0.1:{{server.server_address[1]}}/{bundle.name}"
        with ReplaySession.from_trace(url) as session:
            out["replayed"] = lookup("Paris")
            out["during"] = refused(server.server_address[:2])
        out["divergence"] = getattr(session.divergence, "code", None)
        out["after"] = refused(server.server_address[:2])
        """,
        bundle,
    )
    assert out == {
        "replayed": "Paris: sunny",
        "during": "network_sealed",
        "divergence": "network_sealed",
        "after": "network_sealed",
    }
