"""A side effect handed to a thread that sends after the entrypoint returned (NEWCOMER2 finding 4).

The agent starts a thread for a fire-and-forget notification and returns; the thread sends a moment later.
It went live under the Python API and an exported test run by ``stepfork run`` (only ``stepfork replay``
stayed sealed until its process exited, and said MATCHED). Now every path waits for the thread the replay
started before its verdict: the send is refused, and the verdict is DIVERGED ``network_sealed`` everywhere.
Real processes; the server counts every request.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import cli_env, counting_server, run_cli


@pytest.fixture(scope="module")
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    with counting_server() as srv:
        yield srv


AGENT = """
import sys
import threading
import time
import urllib.request

from stepfork import record, trace_tool


@trace_tool
def lookup(q: str) -> dict:
    return {{"q": q}}


def notify():
    time.sleep(0.05)  # a moment after the agent returned
    try:
        urllib.request.urlopen("http://127.0.0.1:{port}/tickets", timeout=5).read()
    except Exception:
        pass


def run_agent():
    result = lookup("a")
    threading.Thread(target=notify).start()  # fire and forget
    return result


if __name__ == "__main__":
    with record("late", output=sys.argv[1], overwrite=True) as session:
        session.set_output(run_agent())
"""

API = """
from stepfork.replay import replay_entrypoint

outcome = replay_entrypoint("late.sftrace", "late:run_agent")
print(outcome.matching.status, outcome.matching.code)
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, server: http.server.ThreadingHTTPServer) -> Path:
    work = tmp_path_factory.mktemp("late")
    (work / "late.py").write_text(textwrap.dedent(AGENT.format(port=server.server_address[1])))
    before = server.hits  # type: ignore[attr-defined]
    recording = [sys.executable, "late.py", "late.sftrace"]
    subprocess.run(recording, cwd=work, env=cli_env(), check=True, timeout=120)
    assert server.hits == before + 1  # type: ignore[attr-defined]  # the recording's thread reached it
    exported = run_cli(
        "export", "late.sftrace", "--pytest", "-e", "late:run_agent", "-o", "test_late.py", cwd=work
    )
    assert exported.code == 0, exported.text
    return work


def test_the_cli_replay_waits_for_the_thread_and_is_diverged(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    before = server.hits  # type: ignore[attr-defined]
    result = run_cli("replay", "late.sftrace", "-e", "late:run_agent", "--json", cwd=folder)
    matching = json.loads(result.out)["matching"]
    assert (result.code, matching["status"], matching["code"]) == (1, "DIVERGED", "network_sealed"), matching
    assert "the connection to 127.0.0.1:" in matching["message"]
    assert server.hits == before  # type: ignore[attr-defined]


def test_the_python_api_waits_for_the_thread_and_is_diverged(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    before = server.hits  # type: ignore[attr-defined]
    done = subprocess.run(
        [sys.executable, "-c", API], cwd=folder, env=cli_env(), capture_output=True, text=True, timeout=120
    )
    assert done.stdout.split() == ["DIVERGED", "network_sealed"], done.stdout + done.stderr
    assert server.hits == before  # type: ignore[attr-defined]


def test_the_exported_test_fails_under_stepfork_run(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    before = server.hits  # type: ignore[attr-defined]
    receipt = json.loads(run_cli("run", "test_late.py", "--json", cwd=folder).out)
    assert receipt["verdict"] == "failed", receipt
    assert "network sealed" in receipt["detail"], receipt["detail"]
    assert server.hits == before  # type: ignore[attr-defined]
