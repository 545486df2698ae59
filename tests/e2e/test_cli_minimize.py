"""`stepfork minimize` end to end (spec/cli-reference.txt "minimize"; issue 5): the known minimal subset,
the report panel, each exit code and error message. By default the same failure suffices and the report
says whether the bundle replays cleanly; with --clean-replay a minimized bundle replays as its original
does (docs/minimize.md "What counts as the same failure"); refused modes and outputs exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stepfork.trace import Trace, validate_bundle, verify_bundle_integrity

STEPFORK = str(Path(sys.executable).parent / "stepfork")

# Ten independent fetches; the agent alerts when at least two sources are bad (sources 3 and 7 are). Each
# fetch made a nested ``audit`` call while recording; a frozen replay serves the fetch without running its
# body, so it never makes that call. By default the minimal bundle is fetches 3 and 7 (the agent catches
# the replay error of every other fetch); with --clean-replay it is the ten fetches without the audits,
# since a removed fetch the agent still makes is a replay divergence, even when the agent catches it.
FETCH_AGENT = textwrap.dedent(
    """
    import os
    from stepfork.trace import llm_request, trace_tool

    BAD = {3, 7}

    @trace_tool
    def audit(source: int) -> int:
        return source

    @trace_tool
    def fetch(source: int) -> dict:
        audit(source)
        return {"source": source, "bad": source in BAD, "token": "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"}

    def run_agent():
        bad = 0
        for source in range(10):
            try:
                bad += fetch(source)["bad"]
            except Exception:
                pass  # a replay error caught here still makes the replay diverge
        return {"alert": bad >= 2}

    def crash_agent():
        for source in range(10):
            try:
                if fetch(source)["bad"] and source == 7:
                    raise KeyError("bad source 7")
            except KeyError:
                raise
            except Exception:
                pass
        return {"alert": False}

    def drift_agent():
        # asks for source 100 where source 0 was recorded, catches the divergence, completes
        for source in range(10):
            try:
                fetch(100 if source == 0 else source)
            except Exception:
                pass
        return {"alert": False}

    def llm_agent():
        answers = [
            llm_request(model="m-1", provider="local", input={"n": n}, call=lambda n=n: {"n": n})["n"]
            for n in range(3)
        ]
        if answers[-1] == 2:
            raise ValueError("the model said 2")
        return answers
    """
)


def stepfork(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STEPFORK, *map(str, args)], capture_output=True, text=True, timeout=300, check=False, cwd=cwd
    )


@pytest.fixture(scope="module")
def recorded_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fetch agent and its three recordings, made once per module (in fresh interpreters, as a user
    records); each test works on its own copy (``project``)."""
    tmp_path = tmp_path_factory.mktemp("minimize-project")
    (tmp_path / "fetch_agent.py").write_text(FETCH_AGENT)
    script = (
        "import sys\nfrom stepfork.trace import record\nimport fetch_agent\n"
        "fn = getattr(fetch_agent, sys.argv[2])\n"
        "try:\n    with record('fetch-agent', output=sys.argv[1]) as s:\n        s.set_output(fn())\n"
        "except (KeyError, ValueError):\n    pass\n"
    )
    recordings = {"fetch.sftrace": "run_agent", "crash.sftrace": "crash_agent", "llm.sftrace": "llm_agent"}
    for name, fn in recordings.items():
        subprocess.run([sys.executable, "-c", script, name, fn], cwd=tmp_path, check=True)
    (tmp_path / "expected.json").write_text(json.dumps({"alert": False}))
    return tmp_path


@pytest.fixture
def project(recorded_project: Path, tmp_path: Path) -> Path:
    """A copy of the recorded project in this test's tmp_path (minimize writes beside its input)."""
    work = tmp_path / "project"
    shutil.copytree(recorded_project, work)
    return work


def _kept_calls(bundle: Path) -> list[tuple[str, int]]:
    trace = Trace.load(bundle)
    return [(e.name, e.input["source"]) for e in trace.events if e.type == "tool_call"]


def _bytes(bundle: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(bundle.iterdir())}


def test_minimize_keeps_the_calls_the_failure_needs_and_says_the_bundle_does_not_replay_cleanly(
    project: Path,
) -> None:
    proc = stepfork(
        "minimize",
        "fetch.sftrace",
        "-e",
        "fetch_agent:run_agent",
        "--expect-output",
        "expected.json",
        "--output",
        "minimal.sftrace",
        cwd=project,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _kept_calls(project / "minimal.sftrace") == [("fetch", 3), ("fetch", 7)]
    assert "Detecting failure signature...\nMinimizing trace..." in proc.stdout
    rows = [
        "│ Original Events     42 ",
        "│ Minimized Events    6 ",
        "│ Reduction           85.7% ",
        "│ Replay Attempts     ",
        "│ Failure Signature   Output Mismatch ",
        "│ Minimal             Yes ",
        "│ Clean Replay        No (8 removed calls are still made; `stepfork replay` reports DIVERGED) ",
    ]
    panel = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    assert [line[: len(row)] for line, row in zip(panel, rows, strict=True)] == rows
    assert "✓ Minimized trace saved to: minimal.sftrace" in proc.stdout
    assert re.search(r"^Removed \d+ calls:\n  - step \d+: tool fetch$", proc.stdout, re.MULTILINE)
    assert validate_bundle(project / "minimal.sftrace", verify_integrity=True).valid
    assert verify_bundle_integrity(project / "minimal.sftrace").status == "verified"
    assert "sk-a1B2" not in (project / "minimal.sftrace" / "events.jsonl").read_text()
    # what the report said: the fetches the agent still makes are missing, so the replay diverges
    replayed = stepfork("replay", "minimal.sftrace", "--entrypoint", "fetch_agent:run_agent", cwd=project)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "Dependency matching: DIVERGED" in replayed.stdout


def test_clean_replay_keeps_every_call_the_replay_makes_and_drops_those_it_never_makes(
    project: Path,
) -> None:
    proc = stepfork(
        "minimize", "fetch.sftrace", "-e", "fetch_agent:run_agent", "--expect-output", "expected.json",
        "--output", "minimal.sftrace", "--clean-replay", cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _kept_calls(project / "minimal.sftrace") == [("fetch", source) for source in range(10)]
    assert "│ Minimized Events    22 " in proc.stdout
    assert "│ Clean Replay        Yes " in proc.stdout
    # the minimized bundle replays as the original does: every call matched, the recorded output
    replayed = stepfork("replay", "minimal.sftrace", "--entrypoint", "fetch_agent:run_agent", cwd=project)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "Dependency matching: COMPLETE" in replayed.stdout


def test_an_exception_the_agent_raises_after_catching_replay_errors_is_minimized_to_what_it_needs(
    project: Path,
) -> None:
    # crash_agent catches every other error and raises KeyError at source 7: fetch 7 alone reproduces it
    proc = stepfork("minimize", "crash.sftrace", "-e", "fetch_agent:crash_agent", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Failure Signature   Exception (KeyError)" in proc.stdout
    assert "Clean Replay        No (7 removed calls are still made;" in proc.stdout
    assert _kept_calls(project / "crash-minimized.sftrace") == [("fetch", 7)]


def test_with_clean_replay_an_exception_after_caught_replay_errors_reproduces_under_replay(
    project: Path,
) -> None:
    # a candidate without fetch 0 raised the same KeyError, but its replay diverged: not kept as the same
    proc = stepfork(
        "minimize", "crash.sftrace", "-e", "fetch_agent:crash_agent", "--clean-replay", cwd=project
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Failure Signature   Exception (KeyError)" in proc.stdout
    assert _kept_calls(project / "crash-minimized.sftrace") == [("fetch", source) for source in range(8)]
    replayed = stepfork(
        "replay", "crash-minimized.sftrace", "--entrypoint", "fetch_agent:crash_agent", cwd=project
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "Dependency matching: COMPLETE" in replayed.stdout
    assert "Status: REPRODUCED FAILURE" in replayed.stdout


# The spec's example, shaped like the quickstart (a straight-line agent, an output mismatch against
# --expect-output), with an agent that falls back when a call fails: the order lookup decides the
# carrier, so without it the first mismatching path changes; the history and the model's reply do not
# matter to the failure (the bug reads a field the model no longer sends), so they go.
NOTIFY_AGENT = textwrap.dedent(
    """
    from stepfork.trace import llm_request, trace_tool

    @trace_tool
    def order_status(order_id: str) -> dict:
        return {"order_id": order_id, "status": "shipped", "carrier": "FedEx"}

    @trace_tool
    def order_history(order_id: str) -> list:
        return ["created", "paid", "shipped"]

    def run_agent(order_id="ORD-1001"):
        try:
            order = order_status(order_id)
        except Exception:
            order = {"order_id": order_id, "status": "unknown", "carrier": None}
        try:
            history = order_history(order_id)
        except Exception:
            history = []
        try:
            reply = llm_request(
                model="local-notify-1", provider="local", input={"order": order, "history": history},
                call=lambda: {"action": "notify"},
            )
        except Exception:
            reply = {"action": "wait"}
        return {
            "order_id": order_id,
            "should_notify": bool(reply.get("should_notify", False)),
            "carrier": order["carrier"],
        }
    """
)


@pytest.fixture
def notify(tmp_path: Path) -> Path:
    (tmp_path / "notify_agent.py").write_text(NOTIFY_AGENT)
    script = (
        "from stepfork.trace import record\nimport notify_agent\n"
        "with record('notify-agent', output='failure.sftrace') as s:\n"
        "    s.set_output(notify_agent.run_agent())\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True)
    expected = {"order_id": "ORD-1001", "should_notify": True, "carrier": "FedEx"}
    (tmp_path / "expected.json").write_text(json.dumps(expected))
    return tmp_path


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_spec_example_shrinks_a_straight_line_agent_to_the_call_its_output_mismatch_needs(
    notify: Path,
) -> None:
    args = ("minimize", "failure.sftrace", "--entrypoint", "notify_agent:run_agent")
    proc = stepfork(*args, "--expect-output", "expected.json", "--output", "minimal.sftrace", cwd=notify)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Events:          8\n" in proc.stdout
    for row in (
        "│ Original Events     8 ",
        "│ Minimized Events    4 ",
        "│ Reduction           50.0% ",
        "│ Failure Signature   Output Mismatch ",
        "│ Minimal             Yes ",
        "│ Clean Replay        No (2 removed calls are still made; `stepfork replay` reports DIVERGED) ",
    ):
        assert row in proc.stdout
    assert [e.name for e in Trace.load(notify / "minimal.sftrace").events if e.type == "tool_call"] == [
        "order_status"
    ]
    # --json: the same result, the clean-replay verdict included, and nothing else on stdout
    expect = ("--expect-output", "expected.json")
    proc = stepfork(*args, *expect, "-o", "minimal.sftrace", "--overwrite", "--json", cwd=notify)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert (data["original_events"], data["minimized_events"], data["minimal"]) == (8, 4, True)
    assert data["signature"] == {"kind": "output_mismatch", "detail": "should_notify", "divergence": None}
    assert data["clean_replay"] == {
        "required": False,
        "clean": False,
        "matching": "DIVERGED",
        "removed_calls_made": 2,
        "unconsumed": 0,
    }
    # --clean-replay: nothing can go, since the agent makes every call
    proc = stepfork(*args, *expect, "-o", "clean.sftrace", "--clean-replay", "--json", cwd=notify)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert (data["minimized_events"], data["clean_replay"]["clean"], data["clean_replay"]["required"]) == (
        8,
        True,
        True,
    )


# The newcomer's agent (module state an attempt must not leak; one lookup the failure needs, eight calls
# it catches the errors of): by default minimize keeps the lookup alone, and says that bundle replays as
# DIVERGED; with --clean-replay the bundle replays as REPRODUCED FAILURE, as the original does.
STATEFUL_AGENT = textwrap.dedent(
    """
    from stepfork import trace_tool

    COUNTER = 0
    CACHE = {}

    @trace_tool
    def lookup(k: str) -> dict:
        return {"k": k, "v": len(k)}

    @trace_tool
    def noise(i: int) -> int:
        return i

    def run():
        global COUNTER
        COUNTER += 1
        if COUNTER > 1 or CACHE:
            return {"leaked": COUNTER}
        CACHE["x"] = 1
        a = lookup("x")
        for i in range(8):
            try: noise(i)
            except Exception: pass
        if a["v"] == 1:
            raise ValueError("bug hit")
        return {"ok": True}
    """
)


@pytest.fixture
def stateful(tmp_path: Path) -> Path:
    (tmp_path / "stateful.py").write_text(STATEFUL_AGENT)
    script = (
        "from stepfork import record\nimport stateful\n"
        "try:\n    with record('st', output='st2.sftrace'):\n        stateful.run()\n"
        "except ValueError:\n    pass\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True)
    return tmp_path


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_newcomer_case_default_and_clean_replay(stateful: Path) -> None:
    args = ("minimize", "st2.sftrace", "-e", "stateful:run")
    proc = stepfork(*args, "-o", "st2-min.sftrace", cwd=stateful)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "│ Original Events     21 " in proc.stdout  # as the newcomer's (with the run's error event)
    assert "│ Minimized Events    5 " in proc.stdout
    assert "│ Clean Replay        No (8 removed calls are still made; `stepfork" in proc.stdout
    replayed = stepfork("replay", "st2-min.sftrace", "--entrypoint", "stateful:run", cwd=stateful)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "Status: DIVERGED" in replayed.stdout

    proc = stepfork(*args, "-o", "st2-clean.sftrace", "--clean-replay", cwd=stateful)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "│ Minimized Events    21 " in proc.stdout
    assert "│ Clean Replay        Yes " in proc.stdout
    replayed = stepfork("replay", "st2-clean.sftrace", "--entrypoint", "stateful:run", cwd=stateful)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "Status: REPRODUCED FAILURE" in replayed.stdout


def test_a_trace_that_replays_cleanly_has_no_failure_to_minimize(project: Path) -> None:
    proc = stepfork("minimize", "fetch.sftrace", "-e", "fetch_agent:run_agent", cwd=project)
    assert proc.returncode == 1
    assert (
        "Failed to detect original failure signature: trace replay completed successfully; "
        "no failure to minimize"
    ) in proc.stdout  # minimize's finding: stdout (issue 32)


def test_a_replay_that_only_diverges_has_no_failure_to_minimize(project: Path) -> None:
    proc = stepfork("minimize", "fetch.sftrace", "-e", "fetch_agent:drift_agent", cwd=project)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "Failed to detect original failure signature: the replay diverged from the recording (input_diverged)"
    ) in proc.stdout
    assert not (project / "fetch-minimized.sftrace").exists()


def test_a_stepfork_replay_error_is_never_the_failure_signature(quickstart: Path) -> None:
    # live mode refuses the quickstart's tool (minimize has no --allow-live-tool): ReplayPolicyError
    proc = stepfork(
        "minimize", "notify.sftrace", "-e", "quickstart:run_agent", "--mode", "live", "-o", "m.sftrace",
        cwd=quickstart,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "Failed to detect original failure signature: the replay raised a Stepfork replay error "
        "(live_tool_not_authorized), not a failure of the agent"
    ) in proc.stdout
    assert not (quickstart / "m.sftrace").exists()


def test_live_mode_minimizes_a_failure_the_live_llm_calls_reproduce(project: Path) -> None:
    proc = stepfork("minimize", "llm.sftrace", "-e", "fetch_agent:llm_agent", "--mode", "live", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Failure Signature   Exception (ValueError)" in proc.stdout
    replayed = stepfork(
        "replay", "llm-minimized.sftrace", "--entrypoint", "fetch_agent:llm_agent", "--mode", "live",
        cwd=project,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "Status: REPRODUCED FAILURE" in replayed.stdout


@pytest.mark.parametrize(
    ("mode", "line"),
    [
        ("forbidden", "replay mode 'forbidden' refuses every dependency call"),
        ("manual", "replay mode 'manual' needs your approval of every call"),
        ("derived", "replay mode 'derived' is reserved and not supported"),
    ],
)
def test_modes_that_cannot_show_a_failure_of_the_agent_are_refused_with_exit_2(
    project: Path, mode: str, line: str
) -> None:
    proc = stepfork(
        "minimize", "fetch.sftrace", "-e", "fetch_agent:run_agent", "--expect-output", "expected.json",
        "--mode", mode, cwd=project,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]  # one line
    assert line in proc.stderr
    assert "Detecting failure signature" not in proc.stdout
    assert not (project / "fetch-minimized.sftrace").exists()
    args = ("minimize", "fetch.sftrace", "-e", "fetch_agent:run_agent", "-m", mode, "--json")
    as_json = stepfork(*args, cwd=project)
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"] == "invalid_option"
    assert line in json.loads(as_json.stdout)["message"]


@pytest.mark.parametrize(
    ("output", "line"),
    [
        ("fetch.sftrace", "overlaps the input bundle fetch.sftrace"),
        ("nowhere/../fetch.sftrace", "overlaps the input bundle fetch.sftrace"),
        ("link.sftrace", "overlaps the input bundle fetch.sftrace"),
        ("fetch.sftrace/inner.sftrace", "overlaps the input bundle fetch.sftrace"),
        ("minimal.json", "--output must be a .sftrace bundle path: minimal.json"),
    ],
    ids=["same", "dotdot", "symlink", "inside", "suffix"],
)
def test_an_output_that_would_write_over_the_input_is_refused_before_any_replay(
    project: Path, output: str, line: str
) -> None:
    (project / "link.sftrace").symlink_to("fetch.sftrace")
    before = _bytes(project / "fetch.sftrace")
    proc = stepfork(
        "minimize", "fetch.sftrace", "-e", "fetch_agent:run_agent", "--expect-output", "expected.json",
        "--output", output, "--overwrite", cwd=project,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert line in proc.stderr
    assert "Detecting failure signature" not in proc.stdout
    assert _bytes(project / "fetch.sftrace") == before


def test_an_unresolvable_entrypoint_exits_2(project: Path) -> None:
    proc = stepfork("minimize", "fetch.sftrace", "-e", "no_such_module:run", cwd=project)
    assert proc.returncode == 2
    assert "cannot resolve entrypoint no_such_module:run" in proc.stderr


def test_an_unreadable_trace_exits_2(project: Path) -> None:
    proc = stepfork("minimize", "missing.sftrace", "-e", "fetch_agent:run_agent", cwd=project)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_an_existing_output_needs_overwrite(project: Path) -> None:
    (project / "fetch-minimized.sftrace").mkdir()
    args = ("minimize", "fetch.sftrace", "-e", "fetch_agent:run_agent", "--expect-output", "expected.json")
    proc = stepfork(*args, cwd=project)
    assert proc.returncode == 2
    assert "already exists; pass --overwrite to replace it." in proc.stderr
    assert stepfork(*args, "--overwrite", "--attempts", "2", "--timeout", "60", cwd=project).returncode == 0


# Without call 5 the agent logs "PID PPID" and hangs; with a timeout of 600 s only an interrupt ends it.
HANG_AGENT = textwrap.dedent(
    """
    import os, time
    from stepfork.trace import trace_tool

    @trace_tool
    def fetch(source: int) -> dict:
        return {"source": source, "bad": source in (3, 7)}

    def run_agent():
        bad = 0
        for source in range(10):
            try:
                bad += fetch(source)["bad"]
            except Exception:
                if source == 5:
                    with open("hanging.log", "a") as f:
                        f.write(f"{os.getpid()} {os.getppid()}\\n")
                    time.sleep(3600)
        return {"alert": bad >= 2}
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a process is POSIX")
def test_ctrl_c_stops_minimize_and_leaves_no_process_behind(tmp_path: Path) -> None:
    (tmp_path / "hang_agent.py").write_text(HANG_AGENT)
    script = (
        "from stepfork.trace import record\nimport hang_agent\n"
        "with record('hang-agent', output='hang.sftrace') as s:\n    s.set_output(hang_agent.run_agent())\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True)
    (tmp_path / "expected.json").write_text(json.dumps({"alert": False}))
    args = ["minimize", "hang.sftrace", "-e", "hang_agent:run_agent", "--expect-output", "expected.json"]
    cli = subprocess.Popen(
        [STEPFORK, *args, "--timeout", "600"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = tmp_path / "hanging.log"
    deadline = time.monotonic() + 120
    while not (log.exists() and log.read_text().endswith("\n")):  # wait for an attempt to hang
        assert cli.poll() is None, cli.communicate()
        assert time.monotonic() < deadline, "no attempt reached the hang"
        time.sleep(0.05)
    cli.send_signal(signal.SIGINT)
    _, err = cli.communicate(timeout=60)
    assert cli.returncode != 0
    assert "Traceback" not in err
    pids = {int(p) for line in log.read_text().splitlines() for p in line.split()} - {cli.pid}
    assert [pid for pid in pids if _alive(pid)] == []  # the hanging attempts and the zygote are gone
    assert not (tmp_path / "hang-minimized.sftrace").exists()
