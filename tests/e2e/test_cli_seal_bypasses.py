"""The ways around the network seal a newcomer found (NEWCOMER finding 14), each closed or reported.

Each agent below reaches a real HTTP server on 127.0.0.1 (or the DNS) past the seal's ``socket.socket``
hooks, swallows whatever happens, and returns what it recorded, so a replay that let the traffic through
read MATCHED with "Network sealed". Now: the C-level ``connect`` (``_socket``, the base class's method),
a reverse lookup and a ctypes lookup of libc's ``connect`` are refused by the seal's audit hook; a Python
child process (``subprocess``, ``multiprocessing`` with ``spawn``) seals itself from the environment it
inherits (an ``env=`` of its own gets it back) and reports its refusals; a socket connected at import is
refused at import; a child the seal cannot reach is refused (tests/e2e/test_cli_seal_children.py), or, let
run by ``--allow-command``, named on the report. The real CLI in a subprocess, ``--json`` read; the server
counts every request.
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
import os
import socket
import subprocess
import sys

from stepfork import record, trace_tool

PORT = {port}
URL = f"http://127.0.0.1:{{PORT}}/health"
REQUEST = b"GET /health HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n"
FETCH = f"import urllib.request; urllib.request.urlopen({{URL!r}}, timeout=5).read()"


@trace_tool
def lookup(q: str) -> dict:
    return {{"q": q}}


def _done():
    return lookup("a")


def raw_socket_module():
    import _socket

    try:
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        sock.settimeout(5)
        sock.connect(("127.0.0.1", PORT))
        sock.send(REQUEST)
        sock.recv(100)
        sock.close()
    except Exception:
        pass
    return _done()


def base_class_connect():
    try:
        sock = socket.socket()
        socket.socket.__mro__[1].connect(sock, ("127.0.0.1", PORT))
        socket.socket.__mro__[1].send(sock, REQUEST)
        sock.recv(100)
        sock.close()
    except Exception:
        pass
    return _done()


def ctypes_connect():
    import ctypes
    import struct

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.socket(2, 1, 0)
        address = struct.pack("=H", 2) + struct.pack("!H", PORT) + bytes([127, 0, 0, 1]) + bytes(8)
        libc.connect(fd, address, 16)
        libc.send(fd, REQUEST, len(REQUEST), 0)
        os.close(fd)
    except Exception:
        pass
    return _done()


def python_child():
    subprocess.run([sys.executable, "-c", FETCH], check=False, capture_output=True)
    return _done()


def _child_fetch():
    import urllib.request

    urllib.request.urlopen(URL, timeout=5).read()


def multiprocessing_spawn():
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(target=_child_fetch)
    process.start()
    process.join()
    return _done()


def reverse_lookup():
    asks = (lambda: socket.gethostbyaddr("192.0.2.1"), lambda: socket.getnameinfo(("192.0.2.1", 443), 0))
    for ask in asks:
        try:
            ask()
        except Exception:
            pass
    return _done()


def shell_child():
    subprocess.run(["sh", "-c", "exit 0"], check=False)
    return _done()


def program_child():
    subprocess.run(["true"], check=False)
    return _done()


def python_child_without_the_environment():
    subprocess.run([sys.executable, "-c", "pass"], env={{"PATH": os.environ.get("PATH", "")}}, check=False)
    return _done()


if __name__ == "__main__":
    with record("bypass", output=sys.argv[2], overwrite=True) as session:
        session.set_output(globals()[sys.argv[1]]())
"""

PRECONNECTED = """
import os
import socket
import sys

from stepfork import record, trace_tool

CONNECTION = socket.create_connection(("127.0.0.1", {port}), timeout=5)  # connected at import


@trace_tool
def lookup(q: str) -> dict:
    return {{"q": q}}


def os_write():
    try:
        os.write(CONNECTION.fileno(), b"GET /health HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
        CONNECTION.recv(1000)
    except Exception:
        pass
    return lookup("a")


if __name__ == "__main__":
    with record("preconnected", output=sys.argv[2], overwrite=True) as session:
        session.set_output(globals()[sys.argv[1]]())
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, server: http.server.ThreadingHTTPServer) -> Path:
    work = tmp_path_factory.mktemp("bypasses")
    port = server.server_address[1]
    (work / "bypass.py").write_text(textwrap.dedent(AGENT.format(port=port)))
    (work / "preconnected.py").write_text(textwrap.dedent(PRECONNECTED.format(port=port)))
    return work


def record(folder: Path, module: str, function: str) -> str:
    """Record ``module.function`` (live: it reaches the server); return the bundle's name."""
    bundle = f"{function}.sftrace"
    subprocess.run(
        [sys.executable, f"{module}.py", function, bundle], cwd=folder, env=cli_env(), check=True, timeout=120
    )
    return bundle


def replayed(
    folder: Path, module: str, function: str, *options: str, recorded: bool = False
) -> dict[str, object]:
    """Record ``module.function`` (unless ``recorded``), then replay it with the CLI; return the JSON report
    (``exit_code_seen``: the exit status)."""
    bundle = f"{function}.sftrace" if recorded else record(folder, module, function)
    result = run_cli("replay", bundle, "-e", f"{module}:{function}", "--json", *options, cwd=folder)
    report: dict[str, object] = json.loads(result.out)
    report["exit_code_seen"] = result.code
    return report


def assert_refused(report: dict[str, object], *phrases: str) -> None:
    matching = report["matching"]
    assert isinstance(matching, dict)
    assert report["exit_code_seen"] == 1, matching
    assert (matching["status"], matching["code"]) == ("DIVERGED", "network_sealed"), matching
    for phrase in phrases:
        assert phrase in str(matching["message"]), matching["message"]


@pytest.mark.parametrize(
    ("function", "phrase"),
    [
        ("raw_socket_module", "the connection to 127.0.0.1:"),
        ("base_class_connect", "the connection to 127.0.0.1:"),
        ("ctypes_connect", "looking up libc's connect() through ctypes"),
        ("python_child", "a child process started during the replay: the connection to 127.0.0.1:"),
        ("multiprocessing_spawn", "a child process started during the replay: the connection to 127.0.0.1:"),
    ],
)
def test_a_connection_past_the_socket_hooks_is_refused_and_is_the_divergence(
    folder: Path, server: http.server.ThreadingHTTPServer, function: str, phrase: str
) -> None:
    record(folder, "bypass", function)
    before = server.hits  # type: ignore[attr-defined]
    assert before > 0  # the recording reached the server
    report = replayed(folder, "bypass", function, recorded=True)
    assert_refused(report, phrase)
    assert server.hits == before  # type: ignore[attr-defined]  # the replay did not


def test_a_python_child_takes_the_allowed_hosts_with_it(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    before = server.hits  # type: ignore[attr-defined]
    allowed = ("--allow-host", f"127.0.0.1:{server.server_address[1]}")
    report = replayed(folder, "bypass", "python_child", *allowed)
    assert report["exit_code_seen"] == 0, report["matching"]
    assert server.hits == before + 2  # type: ignore[attr-defined]  # the recording's and the replay's


def test_a_reverse_lookup_is_refused(folder: Path) -> None:
    report = replayed(folder, "bypass", "reverse_lookup")
    assert_refused(report, "the reverse lookup (a DNS query) of 192.0.2.1")


def test_os_write_on_a_socket_connected_at_import_never_happens(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    record(folder, "preconnected", "os_write")
    before = server.hits  # type: ignore[attr-defined]
    report = replayed(folder, "preconnected", "os_write", recorded=True)
    assert_refused(report, "while the entrypoint's module 'preconnected' was imported")
    assert server.hits == before  # type: ignore[attr-defined]


@pytest.mark.parametrize("function", ["shell_child", "python_child_without_the_environment"])
def test_a_child_that_reaches_nothing_or_keeps_the_seal_runs_and_the_replay_is_sealed(
    folder: Path, function: str
) -> None:
    """A shell's own command (``sh -c "exit 0"``) runs no program; a Python given an ``env=`` of its own
    gets the seal back: neither is refused, and nothing is left unsealed."""
    report = replayed(folder, "bypass", function)
    assert report["exit_code_seen"] == 0, report["matching"]
    network = {"policy": "sealed", "allowed_hosts": [], "allowed_commands": [], "not_sealed": []}
    assert report["network"] == network


def test_a_child_allow_command_lets_run_is_named_on_the_report(folder: Path) -> None:
    report = replayed(folder, "bypass", "program_child", "--allow-command", "true")
    assert report["exit_code_seen"] == 0, report["matching"]
    gap = "child processes not sealed: 1 started (true)"
    assert report["network"] == {
        "policy": "sealed",
        "allowed_hosts": [],
        "allowed_commands": ["true"],
        "not_sealed": [gap],
    }


def test_a_sealed_python_child_still_runs_its_own_sitecustomize(tmp_path: Path) -> None:
    """The seal's sitecustomize runs first, then the one the child would have run."""
    own = tmp_path / "own"
    own.mkdir()
    marker = tmp_path / "marker.txt"
    (own / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    script = textwrap.dedent(
        f"""
        import os, subprocess, sys
        from stepfork.replay import ReplaySession
        from stepfork.trace import record, trace_tool

        @trace_tool
        def lookup(q):
            return q

        with record("child", output={str(tmp_path / "run.sftrace")!r}):
            lookup("a")
        with ReplaySession.from_trace({str(tmp_path / "run.sftrace")!r}) as session:
            lookup("a")
            env = dict(os.environ, PYTHONPATH=os.environ["PYTHONPATH"] + os.pathsep + {str(own)!r})
            code = "import socket; socket.create_connection(('192.0.2.1', 9), timeout=5)"
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        print(done.returncode, "PermissionError" in done.stderr, getattr(session.divergence, "code", None))
        """
    )
    command = [sys.executable, "-c", script]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["1", "True", "network_sealed"], out.stdout + out.stderr
    assert marker.read_text() == "ran"


def test_check_workers_read_the_refusals_of_their_own_children(
    folder: Path, server: http.server.ThreadingHTTPServer
) -> None:
    """``check`` workers are forked from one zygote sealed for life: each reads the refusals its own
    children report (a worker must not take another's), and every bundle is DIVERGED."""
    corpus = folder / "corpus"
    corpus.mkdir(exist_ok=True)
    for index in range(4):
        bundle = record(folder, "bypass", "python_child")
        (folder / bundle).rename(corpus / f"child-{index}.sftrace")
    before = server.hits  # type: ignore[attr-defined]
    result = run_cli("check", "corpus", "-e", "bypass:python_child", "--jobs", "2", "--json", cwd=folder)
    assert result.code == 1, result.text
    verdicts = json.loads(result.out)["verdicts"]
    assert len(verdicts) == 4
    for verdict in verdicts:
        assert (verdict["verdict"], verdict["code"]) == ("DIVERGED", "network_sealed"), verdict
        assert "a child process started during the replay" in verdict["detail"]
    assert server.hits == before  # type: ignore[attr-defined]


def test_an_exported_test_that_passes_with_an_unsealed_child_warns(folder: Path) -> None:
    bundle = record(folder, "bypass", "program_child")
    exported = run_cli(
        "export", bundle, "--pytest", "-e", "bypass:program_child", "-o", "test_shell.py",
        "--allow-command", "true", cwd=folder,
    )  # fmt: skip
    assert exported.code == 0, exported.text
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shell.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
    )
    assert "1 passed, 1 warning" in done.stdout, done.stdout + done.stderr
    warning = "NetworkSealWarning: network sealed, except: child processes not sealed: 1 started (true)"
    assert warning in done.stdout
