"""The seal's report files (``stepfork-seal-*-PID.log`` in the temporary folder) are not left behind by a
replay whose agent forks a worker that starts a child and ends with ``os._exit``, as ``multiprocessing``'s
fork workers do (stepfork.replay.network_children, "The report files"). Before, the worker made a file of
its own that no one read, and its exit handler, which would have removed it, never ran. The worker's
children report to the replaying process, whose session reads and removes that file; a program
``--allow-command`` let the worker start is counted on the report, as one the agent started itself.

The real CLI in a subprocess, its temporary folder (``TMPDIR``) a folder of the test's own.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import cli_env, stepfork_executable

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX")

AGENT = """
import os
import subprocess
import sys

from stepfork import record, trace_tool

FETCH = "import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/health', timeout=5).read()"


@trace_tool
def lookup(q: str) -> dict:
    return {{"q": q}}


def _in_a_forked_worker(command):
    pid = os.fork()
    if pid == 0:  # a worker, as multiprocessing's fork start method makes one: it ends with os._exit
        try:
            subprocess.run(command, check=False, capture_output=True, timeout=60)
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    return lookup("a")


def python_child():
    return _in_a_forked_worker([sys.executable, "-c", "pass"])


def python_child_fetching():
    return _in_a_forked_worker([sys.executable, "-c", FETCH])


def refused_child():
    return _in_a_forked_worker(["curl", "-s", "http://127.0.0.1:{port}/health"])


def allowed_shell():
    return _in_a_forked_worker(["sh", "-c", "true"])


if __name__ == "__main__":
    with record("forker", output=sys.argv[2], overwrite=True) as session:
        session.set_output(globals()[sys.argv[1]]())
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, seal_server: http.server.ThreadingHTTPServer) -> Path:
    work = tmp_path_factory.mktemp("forker")
    (work / "forker.py").write_text(textwrap.dedent(AGENT.format(port=seal_server.server_address[1])))
    return work


def _run(folder: Path, temp: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**cli_env(), "TMPDIR": str(temp)}
    return subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def replayed(folder: Path, tmp_path: Path, function: str, *options: str) -> tuple[dict[str, object], Path]:
    """Record ``function``, then replay it with the CLI (``--json``), each with a temporary folder of its
    own; return the replay's report (its exit code under ``exit_code_seen``) and the replay's folder."""
    recorded, temp = tmp_path / "record-tmp", tmp_path / "replay-tmp"
    recorded.mkdir()
    temp.mkdir()
    bundle = str(tmp_path / f"{function}.sftrace")
    done = _run(folder, recorded, [sys.executable, "forker.py", function, bundle])
    assert done.returncode == 0, done.stderr
    command = [stepfork_executable(), "replay", bundle, "-e", f"forker:{function}", "--json", *options]
    done = _run(folder, temp, command)
    report: dict[str, object] = json.loads(done.stdout)
    report["exit_code_seen"] = done.returncode
    return report, temp


def _left(temp: Path) -> list[str]:
    return sorted(path.name for path in temp.glob("stepfork-seal-*"))


@pytest.mark.parametrize(
    ("function", "options", "code"),
    [
        ("python_child", (), 0),
        ("python_child_fetching", (), 1),  # the worker's child refused: DIVERGED
        ("refused_child", (), 1),  # curl refused before it started
        ("allowed_shell", ("--allow-command", "sh"), 0),
    ],
)
def test_a_forked_worker_that_starts_a_child_and_ends_with_os_exit_leaves_no_report_file(
    folder: Path, tmp_path: Path, function: str, options: tuple[str, ...], code: int
) -> None:
    report, temp = replayed(folder, tmp_path, function, *options)
    assert report["exit_code_seen"] == code, report
    assert _left(temp) == []


def test_a_refusal_in_the_forked_workers_python_child_is_still_the_divergence(
    folder: Path, tmp_path: Path, seal_server: http.server.ThreadingHTTPServer
) -> None:
    before = seal_server.hits  # type: ignore[attr-defined]
    report, _ = replayed(folder, tmp_path, "python_child_fetching")
    matching = report["matching"]
    assert isinstance(matching, dict)
    assert (report["exit_code_seen"], matching["code"]) == (1, "network_sealed"), matching
    assert "a child process started during the replay" in str(matching["message"])
    assert seal_server.hits == before + 1  # type: ignore[attr-defined]  # the recording's, live; none replayed


def test_a_program_allow_command_let_the_forked_worker_start_is_counted_on_the_report(
    folder: Path, tmp_path: Path
) -> None:
    report, _ = replayed(folder, tmp_path, "allowed_shell", "--allow-command", "sh")
    assert report["exit_code_seen"] == 0, report
    network = report["network"]
    assert isinstance(network, dict)
    assert network["not_sealed"] == ["child processes not sealed: 1 started (sh)"]


REPLAYER = """
import os
import subprocess
import sys

from stepfork.replay import ReplaySession
from forker import lookup

with ReplaySession.from_trace(sys.argv[1]) as session:
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    lookup("a")
print(session.divergence)
sys.stdout.flush()
os._exit(0)  # a worker that replays, as a stepfork check worker or a multiprocessing one ends
"""


def test_a_process_whose_sealed_session_started_a_child_and_that_ends_with_os_exit_leaves_no_file(
    folder: Path, tmp_path: Path
) -> None:
    """The session reads its report file when it ends and removes it, empty or not: no exit handler is
    needed (before, the file stayed for the handler, which ``os._exit`` skips)."""
    _, temp = replayed(folder, tmp_path, "python_child")
    (tmp_path / "replayer.py").write_text(REPLAYER)
    env = cli_env()
    path = [str(folder), env.get("PYTHONPATH", "")]
    env.update(TMPDIR=str(temp), PYTHONPATH=os.pathsep.join(filter(None, path)))
    command = [sys.executable, str(tmp_path / "replayer.py"), str(tmp_path / "python_child.sftrace")]
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "None"), done.stderr
    assert _left(temp) == []
