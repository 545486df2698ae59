"""Crash safety: a recorder killed with SIGKILL at random points never loses a flushed event and never
leaves a half-written manifest, redactions or integrity file (issue 7 part 2; docs/architecture.md "Crash
safety"; CASES.md C6, C11).

Each run starts ``crash_agent.py`` (sync, async or concurrent calls), waits until the agent has reported a
random number of completed calls over a pipe (or, for the first window, until the bundle directory
exists), then kills it. 30 kills in CI, 600 in soak mode.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rel_support import HERE, child_env, record_figure, scale

from stepfork.trace import Trace, TraceStorageError, validate_bundle, verify_bundle_integrity

AGENT = HERE / "crash_agent.py"
KINDS = ("sync", "async", "concurrent")
RUNS_PER_KIND = scale(10, 200)


def _read_reports(fd: int, wanted: int, deadline: float, out: Path) -> list[str]:
    """Read report lines until ``wanted`` keys (0: until manifest.json exists), ``done`` or EOF."""
    keys: list[str] = []
    pending = b""
    while time.monotonic() < deadline:
        if wanted == 0:
            if (out / "manifest.json").exists():
                return keys
            ready, _, _ = select.select([fd], [], [], 0)  # spin: the window before the first call is short
        else:
            ready, _, _ = select.select([fd], [], [], 5.0)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            return keys
        pending += chunk
        *lines, pending = pending.split(b"\n")
        keys.extend(line.decode("ascii") for line in lines)
        if "done" in keys or (wanted and len(keys) >= wanted):
            return keys
    raise AssertionError("the crash agent stopped reporting")


def _drain(fd: int) -> list[str]:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    return [line.decode("ascii") for line in data.split(b"\n") if line]


def _events(bundle: Path) -> list[dict[str, Any]]:
    """The complete lines of events.jsonl (a final line cut by the kill is not an event)."""
    data = (bundle / "events.jsonl").read_bytes()
    return [json.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines()]


def _flushed_calls_on_disk(events: list[dict[str, Any]]) -> set[str]:
    """Keys of calls whose call event AND closing event (result, response or error) are on disk."""
    calls = {e["id"]: e["input"]["key"] for e in events if e["type"] in ("tool_call", "llm_request")}
    closed = {calls[e["parent_id"]] for e in events if e.get("parent_id") in calls and e["type"] != "error"}
    closed |= {calls[e["parent_id"]] for e in events if e["type"] == "error" and e.get("parent_id") in calls}
    return closed


def _check_whole_file(path: Path) -> None:
    """manifest/redactions/integrity are whole JSON documents with a final newline, never half-written."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), f"{path.name} is cut: {data[-80:]!r}"
    json.loads(data)


def _kill_once(tmp_path: Path, kind: str, rng: random.Random, n: int) -> dict[str, Any]:
    out = tmp_path / f"{kind}-{n}.sftrace"
    calls = rng.randint(1, 40)
    # 0: killed as soon as manifest.json exists; calls + 1: never killed, the run ends (its finalize is
    # raced by the kill of wanted == calls); else killed right after the wanted-th call returned
    wanted = rng.choices([0, rng.randint(1, calls), calls, calls + 1], weights=[1, 6, 2, 2])[0]
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, str(AGENT), str(out), kind, str(calls), str(rng.randrange(2**32)), str(write_fd)],
        pass_fds=(write_fd,),
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    os.close(write_fd)
    try:
        keys = _read_reports(read_fd, wanted, time.monotonic() + 60, out)
        if wanted <= calls:
            proc.send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
        keys += _drain(read_fd)
    finally:
        os.close(read_fd)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    finished = "done" in keys
    flushed = {k for k in keys if k != "done"}
    if not finished:
        assert proc.returncode == -signal.SIGKILL, stderr.decode("utf-8", "replace")
    else:
        assert proc.returncode in (0, -signal.SIGKILL), stderr.decode("utf-8", "replace")

    outcome = {"flushed": len(flushed), "bundle": False, "finalized": False, "temp_left": 0, "torn": 0}
    if not (out / "manifest.json").exists():
        # killed before the bundle was opened: nothing was recorded, so nothing may have been reported
        assert not flushed, f"{len(flushed)} calls reported but no manifest.json"
        return outcome
    outcome["bundle"] = True
    outcome["temp_left"] = sum(1 for p in out.iterdir() if ".tmp-" in p.name)
    _check_whole_file(out / "manifest.json")
    _check_whole_file(out / "redactions.json")
    result = validate_bundle(out, strict=False)
    assert result.valid, (kind, n, [(i.code, i.message) for i in result.issues])
    outcome["torn"] = sum(w.code == "torn_final_line" for w in result.warnings)
    on_disk = _flushed_calls_on_disk(_events(out))
    assert flushed <= on_disk, f"flushed calls missing from the bundle: {sorted(flushed - on_disk)[:5]}"
    if (out / "integrity.json").exists():
        _check_whole_file(out / "integrity.json")
        assert verify_bundle_integrity(out).verified
        strict = validate_bundle(out, strict=True, verify_integrity=True)
        assert strict.valid, [(i.code, i.message) for i in strict.issues]
        outcome["finalized"] = True
    if finished and proc.returncode == 0:
        assert outcome["finalized"], "a run that ended normally left no integrity.json"
    return outcome


@pytest.mark.parametrize("kind", KINDS)
def test_a_recorder_killed_at_random_points_keeps_every_flushed_event_and_whole_metadata_files(
    tmp_path: Path, kind: str
) -> None:
    rng = random.Random(f"crash-{kind}-{os.environ.get('STEPFORK_SEED', '7')}")
    outcomes = [_kill_once(tmp_path, kind, rng, n) for n in range(RUNS_PER_KIND)]
    record_figure(
        "crash",
        kind=kind,
        kills=sum(1 for o in outcomes if not o["finalized"]),
        runs=len(outcomes),
        bundles=sum(o["bundle"] for o in outcomes),
        finalized=sum(o["finalized"] for o in outcomes),
        flushed_calls_checked=sum(o["flushed"] for o in outcomes),
        temp_files_left=sum(o["temp_left"] for o in outcomes),
        torn_final_lines=sum(o["torn"] for o in outcomes),
    )
    # the random kill points must cover the three windows: before any call, mid-run, and a finished run
    assert any(o["bundle"] and not o["finalized"] for o in outcomes)
    assert any(o["finalized"] for o in outcomes)


_DIES_MID_RUN = """
import os, sys
from stepfork.trace import record, trace_tool

@trace_tool
def step(i: int) -> int:
    return i

with record("dies", output=sys.argv[1]):
    for i in range(3):
        step(i)
    os._exit(0)  # no finalize: the bundle stays "running", as after a SIGKILL
"""


@pytest.fixture
def running_bundle(tmp_path: Path) -> Path:
    out = tmp_path / "dies.sftrace"
    subprocess.run([sys.executable, "-c", _DIES_MID_RUN, str(out)], env=child_env(), check=True, timeout=60)
    return out


def test_a_final_line_cut_by_a_crash_is_a_partial_mode_warning_and_nothing_is_repaired(
    running_bundle: Path,
) -> None:
    events = running_bundle / "events.jsonl"
    whole = events.read_bytes()
    torn = whole + whole.splitlines(keepends=True)[1][:37]  # a write the kernel stopped part-way
    events.write_bytes(torn)

    partial = validate_bundle(running_bundle, strict=False)
    assert partial.valid, partial.codes
    assert [(w.code, w.location) for w in partial.warnings] == [
        ("run_incomplete", None),
        ("torn_final_line", "events.jsonl:8"),
    ]
    strict = validate_bundle(running_bundle, strict=True)
    assert strict.codes == ["invalid_json"]
    with pytest.raises(TraceStorageError) as info:
        Trace.load(running_bundle)
    assert (info.value.code, info.value.line) == ("invalid_json", 8)
    assert events.read_bytes() == torn


def test_a_cut_final_line_in_a_finished_bundle_is_damage_not_a_crash(running_bundle: Path) -> None:
    manifest = running_bundle / "manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b'"running"', b'"completed"'))
    events = running_bundle / "events.jsonl"
    events.write_bytes(events.read_bytes()[:-5])
    assert validate_bundle(running_bundle, strict=False).codes == ["invalid_json"]
