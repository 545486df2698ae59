"""Each ``minimize`` attempt runs in its own process (issue 5; docs/minimize.md "Isolation and cost of a
replay"): a child forked by the zygote, or a fresh Python per attempt where the zygote cannot be used.
Agent state, hangs and hard crashes never cross attempts, both paths give the same result, and no process
outlives ``minimize``.

Every agent logs ``PID PPID [what]`` per attempt to ``attempts.log`` (attempts run in the import root), which
tells which path ran (a subprocess attempt's parent is this process, a forked one's is the zygote) and which
processes must be gone afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepfork.analysis import MinimizeError, MinimizeResult, minimize_trace
from stepfork.trace import Trace

# forks, kills and timeouts of minimize's zygote: `hatch run slow:test` (tests/conftest.py)
pytestmark = pytest.mark.slow

FORCE_SUBPROCESS = "_STEPFORK_MINIMIZE_SUBPROCESS"  # internal switch of stepfork.analysis._zygote.client

# Ten fetches; the agent alerts when two sources are bad; sources 3 and 7 are. Each fetch made a nested
# ``audit`` call while recording, which a frozen replay never makes (the fetch's body does not run).
# Against {"alert": false} the minimal failing subset is fetches 3 and 7 (the agent catches the replay
# error of every other fetch); with ``clean_replay`` it is the ten fetches without the audits, since a
# fetch the agent still makes would diverge. ``missing(source)`` runs where a fetch is missing from the
# candidate (the replay error the agent catches), ``start()`` at the start of every attempt.

AGENT = """
import os, signal, sys, time
from stepfork.trace import trace_tool

BAD = {{3, 7}}

@trace_tool
def audit(source: int) -> int:
    return source

@trace_tool
def fetch(source: int) -> dict:
    audit(source)
    return {{"source": source, "bad": source in BAD}}

def log(what=""):
    with open("attempts.log", "a") as f:
        f.write(f"{{os.getpid()}} {{os.getppid()}} {{what}}\\n")

{body}

def run_agent():
    log()
    start()
    bad = 0
    for source in range(10):
        try:
            bad += fetch(source)["bad"]
        except Exception:
            missing(source)
    return {{"alert": bad >= 2}}
"""


def fetches(*sources: int) -> list[tuple[str, int]]:
    return [("fetch", source) for source in sources]


def fetch_steps(*sources: int) -> list[int]:
    """Steps of those fetch calls in the recording: run_start, then fetch, audit, audit result, result."""
    return [1 + 4 * source for source in sources]


DEFAULTS = "def start():\n    pass\n\ndef missing(source):\n    pass\n"


def make_project(tmp_path: Path, module: str, body: str = DEFAULTS) -> Path:
    """Write ``<module>.py`` (a unique name: this process imports it to check the entrypoint), record
    ``fetch.sftrace`` from it in a subprocess, write ``expected.json``; return the project directory."""
    (tmp_path / f"{module}.py").write_text(AGENT.format(body=textwrap.dedent(body)))
    script = (
        f"from stepfork.trace import record\nimport {module}\n"
        f"with record('fetch-agent', output='fetch.sftrace') as s:\n    s.set_output({module}.run_agent())\n"
    )
    env = {**os.environ, "MINIMIZE_TEST_RECORDING": "1"}
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True, env=env)
    (tmp_path / "attempts.log").unlink()
    (tmp_path / "expected.json").write_text(json.dumps({"alert": False}))
    return tmp_path


def minimize(project: Path, module: str, **options: object) -> MinimizeResult:
    return minimize_trace(
        project / "fetch.sftrace",
        f"{module}:run_agent",
        expect_output=project / "expected.json",
        output=project / "minimal.sftrace",
        overwrite=True,
        import_root=project,
        **options,  # type: ignore[arg-type]
    )


def kept_calls(result: MinimizeResult) -> list[tuple[str, int]]:
    return [(e.name, e.input["source"]) for e in Trace.load(result.output).events if e.type == "tool_call"]


def attempts(project: Path) -> list[list[str]]:
    return [line.split(" ", 2) for line in (project / "attempts.log").read_text().splitlines()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_nothing_left(project: Path) -> None:
    """Every attempt process, and the zygote (a forked attempt's parent), has exited and been reaped."""
    pids = {int(pid) for pid, _, _ in attempts(project)}
    pids |= {int(ppid) for _, ppid, _ in attempts(project) if int(ppid) != os.getpid()}
    assert pids
    assert [pid for pid in pids if alive(pid)] == []


@pytest.fixture(params=["zygote", "subprocess"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test through the forking zygote and through the subprocess-per-attempt fallback."""
    if request.param == "subprocess":
        monkeypatch.setenv(FORCE_SUBPROCESS, "1")
    else:
        monkeypatch.delenv(FORCE_SUBPROCESS, raising=False)
    return str(request.param)


def test_module_state_an_attempt_mutates_never_reaches_the_next_attempt(tmp_path: Path, path: str) -> None:
    # Fails with another signature as soon as one process runs the agent twice; it also prints protocol-like
    # lines on stdout, at import and per attempt, which must not reach the zygote's protocol.
    body = """
    print('{"id": 0, "kind": "none", "detail": null}')
    CALLS = 0

    def start():
        global CALLS
        CALLS += 1
        print('{"ready": true}\\n{"id": 1, "kind": "none", "detail": null}')
        os.write(1, b'{"id": 2, "kind": "none", "detail": null}\\n')
        if CALLS > 1:
            raise RuntimeError("state left by an earlier attempt")

    def missing(source):
        pass
    """
    project = make_project(tmp_path, f"counter_agent_{path}", body)
    result = minimize(project, f"counter_agent_{path}")
    assert kept_calls(result) == fetches(3, 7)
    assert result.minimal
    assert (result.signature.kind, result.signature.detail) == ("output_mismatch", "alert")
    log = attempts(project)
    assert len(log) == result.replay_attempts
    assert len({pid for pid, _, _ in log}) == len(log)  # one process per attempt
    parents = {int(ppid) for _, ppid, _ in log}
    assert (parents == {os.getpid()}) == (path == "subprocess")
    if path == "zygote":
        assert len(parents) == 1  # every attempt forked from the same zygote
    assert_nothing_left(project)


@pytest.mark.parametrize(
    ("clean_replay", "kept", "clean"),
    [(False, fetch_steps(3, 7), False), (True, fetch_steps(*range(10)), True)],
    ids=["default", "clean-replay"],
)
def test_both_paths_give_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_replay: bool, kept: list[int], clean: bool
) -> None:
    project = make_project(tmp_path, f"same_agent_{clean_replay}")
    monkeypatch.delenv(FORCE_SUBPROCESS, raising=False)
    forked = minimize(project, f"same_agent_{clean_replay}", clean_replay=clean_replay).to_dict()
    monkeypatch.setenv(FORCE_SUBPROCESS, "1")
    spawned = minimize(project, f"same_agent_{clean_replay}", clean_replay=clean_replay).to_dict()
    assert forked == spawned
    assert forked["kept_steps"] == kept
    assert forked["minimal"]
    # the fetches of sources 0-2, 4-6, 8 and 9 are removed yet still made: one divergence each
    assert forked["clean_replay"] == {
        "required": clean_replay,
        "clean": clean,
        "matching": "COMPLETE" if clean else "DIVERGED",
        "removed_calls_made": 0 if clean else 8,
        "unconsumed": 0,
    }


@pytest.fixture
def zygote(monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test through the forking zygote only (the fallback's timeout and crash handling predate it)."""
    monkeypatch.delenv(FORCE_SUBPROCESS, raising=False)
    return "zygote"


def test_a_hanging_attempt_is_killed_at_the_timeout_and_later_attempts_run(
    tmp_path: Path, zygote: str
) -> None:
    # Without fetch 5 the agent hangs: those candidates time out, do not reproduce, so fetch 5 is kept.
    body = """
    def start():
        pass

    def missing(source):
        if source == 5:
            log("hang")
            time.sleep(3600)
    """
    project = make_project(tmp_path, "hang_agent", body)
    result = minimize(project, "hang_agent", timeout=3.0)
    assert kept_calls(result) == fetches(3, 5, 7)
    assert result.minimal
    log = attempts(project)
    hung = [i for i, (_, _, what) in enumerate(log) if what == "hang"]
    assert hung
    assert hung[0] < len(log) - 1  # attempts started after a hang: it did not stop the search
    assert_nothing_left(project)


def test_a_hard_crash_in_an_attempt_is_a_crash_signature(tmp_path: Path, zygote: str) -> None:
    # Without fetch 5 the agent's process is killed (as a segfault would end it): crash, not reproduced.
    body = """
    def start():
        pass

    def missing(source):
        if source == 5:
            os.kill(os.getpid(), signal.SIGKILL)
    """
    project = make_project(tmp_path, "kill_agent", body)
    result = minimize(project, "kill_agent")
    assert kept_calls(result) == fetches(3, 5, 7)
    assert result.minimal
    assert_nothing_left(project)


@pytest.mark.parametrize(
    ("name", "crash", "line"),
    [
        (
            "exit",
            "print('fatal: state corrupt', file=sys.stderr, flush=True); os._exit(3)",
            "fatal: state corrupt",
        ),
        ("sigkill", "os.kill(os.getpid(), signal.SIGKILL)", "no output (killed by signal SIGKILL)"),
        ("interrupt", "raise KeyboardInterrupt", "KeyboardInterrupt"),
    ],
    ids=["os._exit", "SIGKILL", "KeyboardInterrupt"],
)
def test_an_original_replay_that_crashes_reports_its_last_stderr_line(
    tmp_path: Path, path: str, name: str, crash: str, line: str
) -> None:
    # The crash happens in every replay (not while recording), so no failure signature can be detected.
    body = f"""
    def start():
        if not os.environ.get("MINIMIZE_TEST_RECORDING"):
            {crash}

    def missing(source):
        pass
    """
    module = f"crash_agent_{name}_{path}"
    project = make_project(tmp_path, module, body)
    with pytest.raises(MinimizeError) as info:
        minimize(project, module)
    assert info.value.code == "no_failure"
    assert str(info.value).endswith(f"the replay process failed: {line}")
    assert_nothing_left(project)


def test_an_entrypoint_whose_import_starts_a_thread_falls_back_to_a_subprocess_per_attempt(
    tmp_path: Path, zygote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forking a process that runs threads can copy a held lock: the zygote refuses, minimize still works.
    monkeypatch.setenv("MINIMIZE_TEST_PID", str(os.getpid()))
    body = """
    import threading
    if os.getpid() != int(os.environ.get("MINIMIZE_TEST_PID", "0")):  # not in the test process itself
        threading.Thread(target=threading.Event().wait, daemon=True).start()

    def start():
        pass

    def missing(source):
        pass
    """
    project = make_project(tmp_path, "thread_agent", body)
    result = minimize(project, "thread_agent")
    assert kept_calls(result) == fetches(3, 7)
    assert {int(ppid) for _, ppid, _ in attempts(project)} == {os.getpid()}
    assert_nothing_left(project)


def test_an_interrupted_minimize_stops_the_zygote_and_the_attempts_in_flight(
    tmp_path: Path, zygote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without fetch 5 the attempt sends Ctrl-C's signal to this process and hangs: minimize must raise
    # KeyboardInterrupt at once, killing that attempt and the zygote.
    monkeypatch.setenv("MINIMIZE_TEST_PID", str(os.getpid()))
    body = """
    def start():
        pass

    def missing(source):
        if source == 5:
            log("hang")
            os.kill(int(os.environ["MINIMIZE_TEST_PID"]), signal.SIGINT)
            time.sleep(3600)
    """
    project = make_project(tmp_path, "interrupt_agent", body)
    with pytest.raises(KeyboardInterrupt):
        minimize(project, "interrupt_agent", timeout=600.0)
    assert any(what == "hang" for _, _, what in attempts(project))
    assert_nothing_left(project)
