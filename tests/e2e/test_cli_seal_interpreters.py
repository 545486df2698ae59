"""A Python child the seal cannot be installed in is refused, never run unsealed (NEWCOMER4 finding F3).

The seal's ``sitecustomize`` runs in every Python child of a sealed replay. Before, on Python 3.8 the seal
failed on 3.9+ syntax, ``site`` printed "Error in sitecustomize" and the child ran on unsealed: its request
reached the server and the replay said MATCHED (so did 2.7 and 3.7, which have no audit hooks). Now the
entry fails closed: Python 3.8 and later are sealed (the child's connection is refused, ``network_sealed``),
older ones, or any Python whose seal fails to load, are refused before they run anything
(``child_process_refused``), DIVERGED, exit 1, and the server counts 0 requests.

Every interpreter found on this machine (pyenv's, ``/usr/bin``'s, ``PATH``'s) is a case; the case that
always exists makes the real seal's import fail in this test's own interpreter (a module named
``ipaddress`` that raises, first on the child's ``PYTHONPATH``).
"""

from __future__ import annotations

import glob
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepfork.replay.network_children import SITE

from .conftest import cli_env, counting_server, replay_report
from .conftest import report_matching as matching

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX interpreters")


def interpreters() -> dict[tuple[int, int], str]:
    """One CPython per ``major.minor`` found here: pyenv's versions, ``/usr/bin``, ``/usr/local/bin``,
    ``PATH``; by path."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = sorted(glob.glob(os.path.join(root, "versions", "*", "bin", "python*")))
    candidates += sorted(glob.glob("/usr/bin/python*") + glob.glob("/usr/local/bin/python*"))
    candidates += [found for minor in range(0, 20) if (found := shutil.which(f"python3.{minor}"))]
    candidates += [found for found in [shutil.which("python2.7")] if found]
    found: dict[tuple[int, int], str] = {}
    for path in candidates:
        name = re.fullmatch(r"python(\d)\.(\d+)", os.path.basename(path))
        if name and os.access(path, os.X_OK):
            found.setdefault((int(name[1]), int(name[2])), path)
    return found


FOUND = interpreters()

AGENT = """
import os
import subprocess

from stepfork import record, trace_tool


@trace_tool
def lookup(q: str) -> dict:
    return {"q": q}


def _run(env):
    try:  # the agent swallows whatever happens, as agents do (a vendor CLI pinned to an older Python)
        command = [os.environ["CHILD_PY"], "fetch.py"]
        subprocess.run(command, check=False, capture_output=True, timeout=60, env=env)
    except Exception:
        pass
    return lookup("a")


def run_child():
    return _run(None)


def run_child_with_a_broken_seal():
    paths = [os.environ.get("PYTHONPATH", ""), os.path.abspath("broken")]
    return _run({**os.environ, "PYTHONPATH": os.pathsep.join(path for path in paths if path)})


if __name__ == "__main__":
    import sys

    with record("child", output=sys.argv[2], overwrite=True) as session:
        session.set_output(globals()[sys.argv[1]]())
"""

FETCH = """
import socket

connection = socket.create_connection(("127.0.0.1", {port}), 5)
connection.sendall(b"GET /health HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
while connection.recv(4096):  # the whole answer: the server closes after an HTTP/1.0 one
    pass
connection.close()
"""
"""Python 2.7 to 3.14: the request the child makes, with the socket module alone."""


@pytest.fixture(scope="module")
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    with counting_server() as srv:
        yield srv


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, server: http.server.ThreadingHTTPServer) -> Path:
    work = tmp_path_factory.mktemp("interpreters")
    (work / "child.py").write_text(textwrap.dedent(AGENT))
    (work / "fetch.py").write_text(FETCH.format(port=server.server_address[1]))
    (work / "broken").mkdir()  # the seal's rules import ipaddress; fetch.py does not
    (work / "broken" / "ipaddress.py").write_text("raise ImportError('a seal that fails to load')\n")
    return work


@pytest.fixture(scope="module")
def bundles(folder: Path, server: http.server.ThreadingHTTPServer) -> dict[str, str]:
    """Each agent function recorded live with this interpreter as the child (it reaches the server)."""
    made = {}
    for function in ("run_child", "run_child_with_a_broken_seal"):
        before = server.hits  # type: ignore[attr-defined]
        command = [sys.executable, "child.py", function, f"{function}.sftrace"]
        env = {**cli_env(), "CHILD_PY": sys.executable}
        subprocess.run(command, cwd=folder, env=env, check=True, timeout=120)
        assert server.hits == before + 1  # type: ignore[attr-defined]
        made[function] = f"{function}.sftrace"
    return made


def replayed(
    folder: Path, bundle: str, function: str, child: str, monkeypatch: pytest.MonkeyPatch, *options: str
) -> dict[str, object]:
    monkeypatch.setenv("CHILD_PY", child)
    return replay_report(folder, bundle, f"child:{function}", *options)


@pytest.mark.parametrize("version", sorted(FOUND), ids=[f"python{a}.{b}" for a, b in sorted(FOUND)])
def test_a_python_child_is_sealed_or_refused_never_run_unsealed(
    folder: Path,
    bundles: dict[str, str],
    server: http.server.ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    version: tuple[int, int],
) -> None:
    before = server.hits  # type: ignore[attr-defined]
    report = replayed(folder, bundles["run_child"], "run_child", FOUND[version], monkeypatch)
    found = matching(report)
    assert (report["exit_code_seen"], found["status"]) == (1, "DIVERGED"), found
    if version >= (3, 8):  # audit hooks: sealed, its connection refused
        assert found["code"] == "network_sealed", found
        assert "a child process started during the replay: the connection to 127.0.0.1:" in found["message"]
    else:
        assert found["code"] == "child_process_refused", found
        assert f"Python {version[0]}.{version[1]} has no audit hooks" in found["message"], found["message"]
    assert server.hits == before  # type: ignore[attr-defined]


def test_a_python_whose_seal_fails_to_load_is_refused_before_it_runs(
    folder: Path,
    bundles: dict[str, str],
    server: http.server.ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = server.hits  # type: ignore[attr-defined]
    function = "run_child_with_a_broken_seal"
    report = replayed(folder, bundles[function], function, sys.executable, monkeypatch)
    found = matching(report)
    assert report["exit_code_seen"] == 1, found
    assert (found["status"], found["code"]) == ("DIVERGED", "child_process_refused"), found
    reason = "the seal cannot be installed in this Python (ImportError: a seal that fails to load)"
    assert reason in found["message"], found["message"]
    assert server.hits == before  # type: ignore[attr-defined]


def test_the_refused_child_says_why_on_stderr_in_one_line_and_exits_126(folder: Path) -> None:
    """What the agent sees of the refusal: no traceback, one line, the shell's "cannot execute" status."""
    seal = json.dumps({"mode": "frozen", "report": str(folder / "report.log")})
    env = {**os.environ, "STEPFORK_SEAL": seal, "PYTHONPATH": os.pathsep.join([SITE, str(folder / "broken")])}
    done = subprocess.run(
        [sys.executable, "-c", "print('ran')"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (126, ""), done
    assert done.stderr.splitlines() == [
        f"child process refused during frozen replay: {sys.executable} was refused before it ran: the seal "
        "cannot be installed in this Python (ImportError: a seal that fails to load) (Stepfork)"
    ]
    reported = json.loads((folder / "report.log").read_text())
    assert reported["refused"] == "command", reported


def test_allow_command_naming_the_interpreter_lets_it_run_unsealed_and_counted(
    folder: Path,
    bundles: dict[str, str],
    server: http.server.ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refusal's own advice (``--allow-command NAME``) works: the child runs, unsealed, and the report
    counts it."""
    name = os.path.basename(sys.executable)
    function = "run_child_with_a_broken_seal"
    before = server.hits  # type: ignore[attr-defined]
    allowing = ("--allow-command", name)
    report = replayed(folder, bundles[function], function, sys.executable, monkeypatch, *allowing)
    assert report["exit_code_seen"] == 0, report["matching"]
    network = report["network"]
    assert isinstance(network, dict)
    assert network["not_sealed"] == [f"child processes not sealed: 1 started ({name})"], network
    assert server.hits == before + 1  # type: ignore[attr-defined]
