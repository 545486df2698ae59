"""Reference behaviour of replay result types and diffs (REFERENCE-API.md ``stepfork.replay``,
``stepfork.diff``; issue 14): statuses are EventStatus members, diff results are pydantic models, and
``first_difference``/``collect_field_changes`` paths use the reference's form."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from stepfork.diff import (
    DiffResult,
    FieldChange,
    StepDiff,
    TraceSummary,
    collect_field_changes,
    diff_traces,
    extract_behavior,
    first_difference,
    values_equal,
)
from stepfork.recorder import record, trace_tool
from stepfork.replay import RecordedDependencyError, ReplaySession, extract_recorded_calls
from stepfork.trace import EventStatus, RunEnd, RunStart, ToolCall, ToolResult, Trace

from ..conftest import GOLDEN


@trace_tool
def lookup(key: str) -> str:
    if key == "bad":
        raise KeyError(key)
    return key.upper()


def _hand_trace() -> Trace:
    trace = Trace(agent_name="hand")
    start = trace.add(RunStart())
    call = trace.add(ToolCall(name="lookup", input={"key": "a"}, parent_id=start.id))
    trace.add(ToolResult(name="lookup", output="A", parent_id=call.id))
    trace.add(RunEnd(run_status="completed", parent_id=start.id))
    return trace


def test_recorded_call_status_is_an_event_status_member() -> None:
    calls = extract_recorded_calls(_hand_trace())
    assert calls[0].status is EventStatus.OK
    assert calls[0].status == "ok"


def test_a_call_without_outcome_is_missing_with_status_skipped() -> None:
    trace = Trace(agent_name="hand")
    start = trace.add(RunStart())
    trace.add(ToolCall(name="lookup", input={"key": "a"}, parent_id=start.id))
    (call,) = extract_recorded_calls(trace)
    assert call.missing
    assert call.status is EventStatus.SKIPPED


def test_executed_call_status_is_the_recorded_event_status(tmp_path: Path) -> None:
    bundle = tmp_path / "r.sftrace"
    with record("a", output=bundle):
        lookup("a")
        with contextlib.suppress(KeyError):
            lookup("bad")
    with ReplaySession.from_trace(bundle) as replay:
        assert lookup("a") == "A"
        with pytest.raises(RecordedDependencyError):
            lookup("bad")
    statuses = [c.status for c in replay.executed_calls]
    assert statuses == [EventStatus.OK, EventStatus.ERROR]
    assert all(isinstance(s, EventStatus) for s in statuses)


def test_a_hand_built_trace_replays() -> None:
    with ReplaySession(_hand_trace(), mode="frozen") as replay:
        assert lookup("a") == "A"
    replay.verify_complete()
    assert replay.pending == 0
    assert [m.action for m in replay.matched] == ["substituted"]


def test_diff_result_and_its_parts_are_pydantic_models() -> None:
    result = diff_traces(GOLDEN / "diff_baseline.sftrace", GOLDEN / "diff_changed.sftrace")
    assert isinstance(result, DiffResult)
    assert isinstance(result.baseline, TraceSummary)
    assert all(isinstance(s, StepDiff) for s in result.steps)
    changes = [c for s in result.steps for c in s.changes]
    assert changes
    assert all(isinstance(c, FieldChange) for c in changes)
    dumped = json.loads(result.model_dump_json())
    assert dumped["equivalent"] is False
    keys = {"equivalent", "baseline", "candidate", "steps", "added", "removed", "changed", "unchanged"}
    assert keys <= set(dumped)
    assert DiffResult.model_validate_json(result.model_dump_json()).equivalent is False
    assert result.exit_code == 1


def test_field_change_dumps_an_absent_side_as_null() -> None:
    output: list[FieldChange] = []
    collect_field_changes({"a": 1}, {}, path="", output=output)
    dumped = json.loads(output[0].model_dump_json())
    assert dumped == {"path": "a", "kind": "removed", "expected": 1, "actual": None}


@pytest.mark.parametrize(
    ("expected", "actual", "path"),
    [
        ({"a": 1}, {"a": 2}, "a"),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}, "a.b[1]"),
        ([1, 2], [1, 3], "[1]"),
        (1, 2, "$"),
        ({"value": 1}, {"value": 1.0}, "value"),
    ],
)
def test_first_difference_paths_use_the_reference_form(expected: object, actual: object, path: str) -> None:
    found = first_difference(expected, actual)
    assert found is not None
    assert found[0] == path


def test_first_difference_is_none_for_equal_values() -> None:
    assert first_difference({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}) is None


def test_collect_field_changes_appends_and_returns_none() -> None:
    output: list[FieldChange] = []
    assert collect_field_changes({"x": [1]}, {"x": [1, 2]}, path="output", output=output) is None
    assert [(c.path, c.kind) for c in output] == [("output.x[1]", "added")]


def test_values_equal_is_canonical() -> None:
    assert values_equal({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not values_equal(1, 1.0)
    assert not values_equal(float("nan"), float("nan"))


def test_extract_behavior_steps() -> None:
    steps = extract_behavior(Trace.load(GOLDEN / "successful_run.sftrace"))
    assert [s.step_type for s in steps] == ["llm", "tool", "run"]
    assert set(steps[1].payload) >= {"input", "output", "status"}
