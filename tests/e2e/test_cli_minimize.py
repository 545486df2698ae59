"""`stepfork minimize` end to end (spec/cli-reference.txt "minimize"; issue 5): the known minimal subset,
the report panel, each exit code and error message."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stepfork.trace import Trace, validate_bundle, verify_bundle_integrity

STEPFORK = str(Path(sys.executable).parent / "stepfork")

# Ten independent fetches; the agent alerts when at least two sources are bad. The recording has sources
# 3 and 7 bad, so the minimal failing subset (against {"alert": false}) is exactly those two calls.
FETCH_AGENT = textwrap.dedent(
    """
    from stepfork.trace import trace_tool

    BAD = {3, 7}

    @trace_tool
    def fetch(source: int) -> dict:
        return {"source": source, "bad": source in BAD, "token": "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"}

    def run_agent():
        bad = 0
        for source in range(10):
            try:
                bad += fetch(source)["bad"]
            except Exception:
                pass  # a call missing from the bundle fails before its body; the agent carries on
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
    """
)


def stepfork(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STEPFORK, *map(str, args)], capture_output=True, text=True, timeout=300, check=False, cwd=cwd
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "fetch_agent.py").write_text(FETCH_AGENT)
    script = (
        "import sys\nfrom stepfork.trace import record\nimport fetch_agent\n"
        "fn = getattr(fetch_agent, sys.argv[2])\n"
        "try:\n    with record('fetch-agent', output=sys.argv[1]) as s:\n        s.set_output(fn())\n"
        "except KeyError:\n    pass\n"
    )
    for name, fn in (("fetch.sftrace", "run_agent"), ("crash.sftrace", "crash_agent")):
        subprocess.run([sys.executable, "-c", script, name, fn], cwd=tmp_path, check=True)
    (tmp_path / "expected.json").write_text(json.dumps({"alert": False}))
    return tmp_path


def _kept_calls(bundle: Path) -> list[int]:
    trace = Trace.load(bundle)
    return [e.input["source"] for e in trace.events if e.type == "tool_call"]


def test_minimize_keeps_exactly_the_calls_the_output_mismatch_needs(project: Path) -> None:
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
    assert _kept_calls(project / "minimal.sftrace") == [3, 7]
    assert "Detecting failure signature...\nMinimizing trace..." in proc.stdout
    assert "│ Original Events     22" in proc.stdout
    assert "│ Minimized Events    6 " in proc.stdout
    assert "│ Failure Signature   Output Mismatch" in proc.stdout
    assert "│ Minimal             Yes" in proc.stdout
    assert "✓ Minimized trace saved to: minimal.sftrace" in proc.stdout
    assert validate_bundle(project / "minimal.sftrace", verify_integrity=True).valid
    assert verify_bundle_integrity(project / "minimal.sftrace").status == "verified"
    assert "sk-a1B2" not in (project / "minimal.sftrace" / "events.jsonl").read_text()


def test_minimize_an_exception_signature_with_the_default_output_path(project: Path) -> None:
    proc = stepfork("minimize", "crash.sftrace", "-e", "fetch_agent:crash_agent", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Failure Signature   Exception (KeyError)" in proc.stdout
    assert _kept_calls(project / "crash-minimized.sftrace") == [7]


def test_a_trace_that_replays_cleanly_has_no_failure_to_minimize(project: Path) -> None:
    proc = stepfork("minimize", "fetch.sftrace", "-e", "fetch_agent:run_agent", cwd=project)
    assert proc.returncode == 1
    assert (
        "Failed to detect original failure signature: trace replay completed successfully; "
        "no failure to minimize"
    ) in proc.stderr


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


def test_the_reserved_derived_mode_is_refused_with_exit_2(project: Path) -> None:
    proc = stepfork(
        "minimize", "fetch.sftrace", "-e", "fetch_agent:run_agent", "--mode", "derived", cwd=project
    )
    assert proc.returncode == 2
    assert "replay mode 'derived' is reserved and not supported" in proc.stderr
    assert not (project / "fetch-minimized.sftrace").exists()


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
