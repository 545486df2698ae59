"""A value fresh by its shape alone must have been made by the run (NEWCOMER5 F1).

A project id written in the code is a uuid4 the run never made: when it changes, the agent works on
another project, and ``diff``/replay must say so. Where a recording says what it minted (``minted.json``),
a random UUID is fresh only when the run minted it, and a time-based one (a uuid7 or ULID made by native
code no hook sees, as LangChain's ``lc_run--<uuid7>``) only when its time lies in the run's window.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint
from stepfork.trace import record, trace_tool

PROJECTS = {"a": "3f2c9a1e-6b7d-4c1a-9e2f-8a7b6c5d4e3f", "b": "9d8e7f6a-5b4c-4d3e-8f2a-1b0c9d8e7f6a"}
_COUNTER = itertools.count()


def native_uuid7(millis: int | None = None) -> str:
    """A uuid7 as a native extension makes one: its time, and bits Stepfork's mint log never saw."""
    stamp = int(time.time() * 1000) if millis is None else millis
    tail = (next(_COUNTER) * 0x9E3779B97F4A7C15 + time.perf_counter_ns()) & ((1 << 74) - 1)
    value = (stamp << 80) | (0x7 << 76) | ((tail >> 62) << 64) | (0b10 << 62) | (tail & ((1 << 62) - 1))
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@trace_tool
def delete_documents(project_id: str, older_than_days: int) -> dict[str, Any]:
    return {"deleted": 3, "project_id": project_id}


def cleanup_agent() -> dict[str, Any]:
    project = PROJECTS[os.environ.get("PROJECT", "a")]  # a constant of the code (its configuration)
    return {"deleted": delete_documents(project, 30)["deleted"], "project": project}


def traced_agent() -> dict[str, Any]:
    run_id = f"lc_run--{native_uuid7()}-0"  # minted natively, in the run's time
    return {"deleted": delete_documents(PROJECTS["a"], 30)["deleted"], "run": run_id}


def old_stamp_agent() -> dict[str, Any]:
    batch = native_uuid7(millis=1_600_000_000_000 + next(_COUNTER))  # a uuid7 of 2020: not this run's
    return {"deleted": delete_documents(PROJECTS["a"], 30)["deleted"], "batch": batch}


def recorded(tmp_path: Path, agent: Any, name: str) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("shape", output=bundle) as session:
        session.set_output(agent())
    return bundle


def test_a_changed_constant_uuid_is_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    baseline = recorded(tmp_path, cleanup_agent, "a")
    assert diff_traces(baseline, recorded(tmp_path, cleanup_agent, "a2")).equivalent
    assert replay_entrypoint(baseline, cleanup_agent).behavior.status == "MATCHED"
    monkeypatch.setenv("PROJECT", "b")
    changed = diff_traces(baseline, recorded(tmp_path, cleanup_agent, "b"))
    assert [c.path for c in changed.changes][:1] == ["input.project_id"]
    wrong = replay_entrypoint(baseline, cleanup_agent)
    assert wrong.matching.status == "DIVERGED"
    assert "project_id" in wrong.matching.message


def test_a_natively_made_time_based_id_of_the_run_is_fresh_and_one_of_another_time_is_not(
    tmp_path: Path,
) -> None:
    first, second = recorded(tmp_path, traced_agent, "t1"), recorded(tmp_path, traced_agent, "t2")
    result = diff_traces(first, second)
    assert result.equivalent, str(result)
    assert replay_entrypoint(first, traced_agent).behavior.status == "MATCHED"
    old = recorded(tmp_path, old_stamp_agent, "o1")
    assert not diff_traces(old, recorded(tmp_path, old_stamp_agent, "o2")).equivalent
    assert replay_entrypoint(old, old_stamp_agent).behavior.status == "DIVERGED"
