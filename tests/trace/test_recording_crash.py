"""A recorder killed mid-run leaves a partial bundle holding every event up to the last flush (C11)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from stepfork.trace import validate_bundle
from stepfork.trace.canonical import loads_json

AGENT = textwrap.dedent(
    """
    import os, sys
    from stepfork.trace import record, trace_tool

    @trace_tool
    def step(i: int) -> dict:
        return {"i": i, "note": "x" * 100}

    out, calls, signal_fd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with record("crashing agent", output=out, run_input={"calls": calls}):
        for i in range(calls):
            step(i)
        os.write(signal_fd, b"%d calls\\n" % calls)  # tell the parent, then wait to be killed
        sys.stdin.read()
    """
)


def test_a_killed_recorder_leaves_a_running_bundle_that_partial_validation_accepts(tmp_path: Path) -> None:
    out = tmp_path / "killed.sftrace"
    calls = 25
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(out), str(calls), str(write_fd)],
        stdin=subprocess.PIPE,
        pass_fds=(write_fd,),
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as signals:
            assert signals.readline() == b"%d calls\n" % calls
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        if proc.stdin:
            proc.stdin.close()
    assert proc.returncode == -signal.SIGKILL

    manifest = loads_json((out / "manifest.json").read_bytes())
    assert manifest["status"] == "running"
    assert not (out / "integrity.json").exists()
    events = [loads_json(line) for line in (out / "events.jsonl").read_bytes().splitlines()]
    # every event of the k calls made before the signal is on disk: run_start + call/result pairs
    assert len(events) == 1 + 2 * calls
    assert [e["input"]["i"] for e in events if e["type"] == "tool_call"] == list(range(calls))
    assert validate_bundle(out, strict=False).valid
