"""End-to-end helpers: run the real ``stepfork`` executable in a subprocess, as a user types it."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import GOLDEN, REFERENCE

__all__ = ["GOLDEN", "REFERENCE"]

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINTS = Path(__file__).resolve().parent / "entrypoints"
QUICKSTART = REPO / "examples" / "quickstart"


def stepfork_executable() -> str:
    """The console script installed beside this interpreter (the hatch env), else the one on PATH."""
    beside = Path(sys.executable).parent / "stepfork"
    if beside.exists():
        return str(beside)
    found = shutil.which("stepfork")
    if found is None:  # pragma: no cover - the test environment installs stepfork-cli
        pytest.skip("the stepfork executable is not installed")
    return found


@dataclass
class Result:
    """What a command did: exit code, stdout, stderr."""

    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def cli_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "120", "NO_COLOR": "1"}
    env.pop("STEPFORK_DEBUG", None)
    return env


def run_cli(*args: str | os.PathLike[str], cwd: Path | None = None, stdin: str | None = None) -> Result:
    """Run ``stepfork ARGS`` in ``cwd`` and capture everything (a 120 s guard against hangs)."""
    done = subprocess.run(
        [stepfork_executable(), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        input=stdin if stdin is not None else "",
        env=cli_env(),
        timeout=120,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def replay_report(folder: Path, bundle: str, entrypoint: str, *options: str) -> dict[str, object]:
    """``stepfork replay BUNDLE -e ENTRYPOINT --json OPTIONS`` run in ``folder`` (:func:`run_cli`): the JSON
    report, with the command's exit code added under ``exit_code_seen``."""
    result = run_cli("replay", bundle, "-e", entrypoint, "--json", *options, cwd=folder)
    report: dict[str, object] = json.loads(result.out)
    report["exit_code_seen"] = result.code
    return report


def report_matching(report: dict[str, object]) -> dict[str, str]:
    """The ``matching`` object of a replay's JSON report (:func:`replay_report`)."""
    found = report["matching"]
    assert isinstance(found, dict)
    return found


def run_in_process(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
) -> Result:
    """``stepfork ARGS`` (in ``cwd``) through the console script's own ``main`` in this process: the same
    parsing, command and exit code as :func:`run_cli` without an interpreter start. For the cells of a
    matrix that prove the same wiring; each file keeps the real executable for each command and exit code.

    What a replay leaves in the process is undone as a fresh process would have it: ``sys.path`` (an
    entrypoint's import root stays on it) at the test's teardown, and the modules imported from a given
    ``cwd`` (the user's tree: the next test's tree has modules of the same names) at once."""
    from stepfork.cli.app import main

    for name, value in cli_env().items():
        monkeypatch.setenv(name, value)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "path", list(sys.path))
    loaded = set(sys.modules)
    capsys.readouterr()
    try:
        with pytest.raises(SystemExit) as ended:
            main([str(a) for a in args])
    finally:
        if cwd is not None:
            _forget_modules_under(cwd.resolve(), set(sys.modules) - loaded)
    out, err = capsys.readouterr()
    return Result(int(ended.value.code or 0), out, err)


def _forget_modules_under(root: Path, names: set[str]) -> None:
    for name in names:
        file = getattr(sys.modules[name], "__file__", None)
        if file and Path(file).resolve().is_relative_to(root):
            del sys.modules[name]


InProcess = Callable[..., Result]


@pytest.fixture
def in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> InProcess:
    """``in_process(*ARGS, cwd=None)``: :func:`run_in_process` bound to this test's capsys and monkeypatch."""

    def run(*args: str | os.PathLike[str], cwd: Path | None = None) -> Result:
        return run_in_process(capsys, monkeypatch, *args, cwd=cwd)

    return run


@pytest.fixture
def quickstart(tmp_path: Path) -> Path:
    """A working copy of examples/quickstart (agent, committed bundle, expected.json) in tmp_path."""
    work = tmp_path / "quickstart"
    work.mkdir()
    copy_quickstart(work)
    return work


def copy_quickstart(work: Path) -> None:
    for name in ("quickstart.py", "expected.json"):
        shutil.copy2(QUICKSTART / name, work / name)
    shutil.copytree(QUICKSTART / "notify.sftrace", work / "notify.sftrace")


QuickstartExport = Callable[[Path, str, str], Path]


@pytest.fixture(scope="session")
def quickstart_export(tmp_path_factory: pytest.TempPathFactory) -> QuickstartExport:
    """``export(work, entrypoint, output)``: put the test `stepfork export notify.sftrace --pytest
    --entrypoint ENTRYPOINT --expect-output expected.json --output OUTPUT` writes into ``work`` (a copy of the
    quickstart) and return its path.

    The real CLI writes each (entrypoint, output) once per test process, in a quickstart copy of its own; the
    file names its bundle and import root relative to itself (``HERE / 'notify.sftrace'``), so a copy serves
    every test that needs it. The tests of export itself run it each time; these tests are about `run`,
    receipts and refusals of what export wrote."""
    written: dict[tuple[str, str], bytes] = {}

    def export(work: Path, entrypoint: str, output: str) -> Path:
        key = (entrypoint, output)
        if key not in written:
            source = tmp_path_factory.mktemp("quickstart-export")
            copy_quickstart(source)
            result = run_cli(
                "export", "notify.sftrace", "--pytest", "--entrypoint", entrypoint,
                "--expect-output", "expected.json", "--output", output, cwd=source,
            )  # fmt: skip
            assert result.code == 0, result.text
            written[key] = (source / output).read_bytes()
        target = work / output
        target.write_bytes(written[key])
        return target

    return export


class _CountingHandler(http.server.BaseHTTPRequestHandler):
    """Answers every GET with ``{"ok": true}`` and counts it in ``server.hits``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits += 1  # type: ignore[attr-defined]
        body = json.dumps({"ok": True}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def counting_server() -> Iterator[http.server.ThreadingHTTPServer]:
    """A real HTTP server on 127.0.0.1 (an ephemeral port) counting the GETs it answers in ``.hits``: what
    the seal tests point an agent at to prove a replay sent nothing. Stopped on exit."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CountingHandler)
    srv.hits = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


COMMAND_AGENT = """
import json
import os
import subprocess

from stepfork import record, trace_tool


@trace_tool
def lookup(q: str) -> dict:
    return {"q": q}


def run_command():
    env = dict(os.environ, **json.loads(os.environ.get("SF_ENV", "{}")))
    try:  # the agent swallows whatever happens, as agents do
        command = json.loads(os.environ["SF_COMMAND"])
        subprocess.run(command, env=env, check=False, capture_output=True, timeout=60)
    except Exception:
        pass
    return lookup("a")


if __name__ == "__main__":
    import sys

    with record("command", output=sys.argv[1], overwrite=True) as session:
        session.set_output(run_command())
"""
"""An agent (``run_command``) that starts the child ``SF_COMMAND`` names (a JSON list of words), with the
variables ``SF_ENV`` adds (JSON) in its ``env=``, then calls a ``@trace_tool``: what the seal's child
process tests replay. ``python agent.py BUNDLE`` records it."""


@pytest.fixture(scope="module")
def seal_server() -> Iterator[http.server.ThreadingHTTPServer]:
    """:func:`counting_server` for a module's tests."""
    with counting_server() as srv:
        yield srv
