"""Child processes the network seal cannot reach are refused in frozen replay (NEWCOMER2 finding 3).

Each agent below starts a child that reaches a real HTTP server on 127.0.0.1 and swallows whatever
happens, so a replay that let the child run read MATCHED with "Network sealed": ``curl``, ``os.system``, a
``python -I``, a Python given an ``env=`` of its own, a Python behind a shell. Now the child the seal cannot
reach is refused before it starts (``child_process_refused``, DIVERGED, exit 1, naming the command), a
Python child keeps the seal (its ``env=`` gets it back), a refusal in a grandchild behind a shell reaches
the verdict, and ``--allow-command NAME`` lets a program run, said on the report. The real CLI in a
subprocess, ``--json`` read; the server counts every request.
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

from .conftest import cli_env, counting_server, replay_report, run_cli
from .conftest import report_matching as matching

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX programs (curl, sh)")


@pytest.fixture(scope="module")
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    with counting_server() as srv:
        yield srv


AGENT = """
import os
import subprocess
import sys

from stepfork import record, trace_tool

URL = "http://127.0.0.1:{port}/health"
FETCH = f"import urllib.request; urllib.request.urlopen({{URL!r}}, timeout=5).read()"


@trace_tool
def lookup(q: str) -> dict:
    return {{"q": q}}


def _run(command, **options):
    try:  # the agent swallows whatever happens, as agents do
        subprocess.run(command, check=False, capture_output=True, timeout=60, **options)
    except Exception:
        pass
    return lookup("a")


def curl_child():
    return _run(["curl", "-s", URL])


def os_system():
    try:
        os.system(f"curl -s {{URL}} >/dev/null")
    except Exception:
        pass
    return lookup("a")


def isolated_python():
    return _run([sys.executable, "-I", "-c", FETCH])


def python_with_its_own_env():
    return _run([sys.executable, "-c", FETCH], env={{"PATH": os.environ.get("PATH", "")}})


def shell_running_python():
    return _run(["sh", "-c", f"{{sys.executable}} fetch.py"])


def python_behind_a_shell_script():
    return _run(["sh", "-c", f"true; {{sys.executable}} fetch.py"])


if __name__ == "__main__":
    with record("children", output=sys.argv[2], overwrite=True) as session:
        session.set_output(globals()[sys.argv[1]]())
"""

FETCH = """
import urllib.request

urllib.request.urlopen("http://127.0.0.1:{port}/health", timeout=5).read()
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, server: http.server.ThreadingHTTPServer) -> Path:
    work = tmp_path_factory.mktemp("children")
    port = server.server_address[1]
    (work / "children.py").write_text(textwrap.dedent(AGENT.format(port=port)))
    (work / "fetch.py").write_text(FETCH.format(port=port))
    return work


def record(folder: Path, function: str, server: http.server.ThreadingHTTPServer) -> str:
    """Record ``function`` live (its child reaches the server); return the bundle's name."""
    bundle = f"{function}.sftrace"
    before = server.hits  # type: ignore[attr-defined]
    command = [sys.executable, "children.py", function, bundle]
    subprocess.run(command, cwd=folder, env=cli_env(), check=True, timeout=120)
    assert server.hits == before + 1  # type: ignore[attr-defined]  # the recording reached the server
    return bundle


def replayed(folder: Path, bundle: str, function: str, *options: str) -> dict[str, object]:
    return replay_report(folder, bundle, f"children:{function}", *options)


@pytest.mark.parametrize(
    ("function", "code", "phrase"),
    [
        ("curl_child", "child_process_refused", "the command `curl -s http://127.0.0.1:"),
        ("os_system", "child_process_refused", "the command `sh -c 'curl -s http://127.0.0.1:"),
        ("isolated_python", "child_process_refused", "-I makes Python ignore the environment the seal"),
        ("python_with_its_own_env", "network_sealed", "a child process started during the replay"),
        ("shell_running_python", "network_sealed", "a child process started during the replay"),
    ],
)
def test_a_child_the_seal_cannot_reach_is_refused_and_nothing_is_sent(
    folder: Path, server: http.server.ThreadingHTTPServer, function: str, code: str, phrase: str
) -> None:
    bundle = record(folder, function, server)
    before = server.hits  # type: ignore[attr-defined]
    report = replayed(folder, bundle, function)
    found = matching(report)
    assert report["exit_code_seen"] == 1, found
    assert (found["status"], found["code"]) == ("DIVERGED", code), found
    assert phrase in found["message"], found["message"]
    assert server.hits == before  # type: ignore[attr-defined]


def test_a_refusal_in_a_grandchild_behind_an_allowed_shell_reaches_the_verdict(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    """``--allow-command sh`` lets the shell run; the Python it starts is still sealed, and reports its
    refusal to the replay (not to the shell, which reads nothing)."""
    bundle = record(folder, "python_behind_a_shell_script", server)
    before = server.hits  # type: ignore[attr-defined]
    report = replayed(folder, bundle, "python_behind_a_shell_script", "--allow-command", "sh")
    found = matching(report)
    assert (report["exit_code_seen"], found["code"]) == (1, "network_sealed"), found
    assert "a child process started during the replay: the connection to 127.0.0.1:" in found["message"]
    assert server.hits == before  # type: ignore[attr-defined]


def test_allow_command_lets_the_program_run_and_the_report_says_so(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    bundle = record(folder, "curl_child", server)
    before = server.hits  # type: ignore[attr-defined]
    report = replayed(folder, bundle, "curl_child", "--allow-command", "curl")
    assert report["exit_code_seen"] == 0, report["matching"]
    gap = "child processes not sealed: 1 started (curl)"
    assert report["network"] == {
        "policy": "sealed",
        "allowed_hosts": [],
        "allowed_commands": ["curl"],
        "not_sealed": [gap],
    }
    assert server.hits == before + 1  # type: ignore[attr-defined]
    text = run_cli("replay", bundle, "-e", "children:curl_child", "--allow-command", "curl", cwd=folder)
    assert f"Network       sealed (allowed commands: curl; {gap})" in text.out, text.out


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_an_exported_test_fails_on_a_refused_child_and_passes_with_allow_command(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    bundle = record(folder, "curl_child", server)
    for output, options in (("test_curl.py", ()), ("test_curl_allowed.py", ("--allow-command", "curl"))):
        exported = run_cli(
            "export", bundle, "--pytest", "-e", "children:curl_child", "-o", output, *options, cwd=folder
        )
        assert exported.code == 0, exported.text
    before = server.hits  # type: ignore[attr-defined]
    receipt = json.loads(run_cli("run", "test_curl.py", "--json", cwd=folder).out)
    assert receipt["verdict"] == "failed", receipt
    assert "child_process_refused" in receipt["detail"] or "child process refused" in receipt["detail"]
    assert server.hits == before  # type: ignore[attr-defined]
    receipt = json.loads(run_cli("run", "test_curl_allowed.py", "--json", cwd=folder).out)
    assert receipt["verdict"] == "passed", receipt
    assert server.hits == before + 1  # type: ignore[attr-defined]


def test_a_malformed_allow_command_is_one_line_exit_2(folder: Path) -> None:
    result = run_cli("replay", "x.sftrace", "-e", "children:curl_child", "--allow-command", " ", cwd=folder)
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "--allow-command: invalid allowed command ' ': expected a program's name or path, for example curl "
        "or /usr/bin/curl"
    ]
