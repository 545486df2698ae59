"""The fast input match of replay (one orjson encoding + one SHA-256) never accepts what the full check
would refuse: stored fingerprints are still verified, floats and big ints still follow the byte rule."""

from __future__ import annotations

from typing import Any

import pytest

from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import RunStart, ToolCall, ToolResult, Trace, fingerprint, trace_tool


@trace_tool(name="measure")
def measure(x: float, n: int) -> dict[str, Any]:
    return {"x": x, "n": n}


def _one_call(recorded_input: dict[str, Any], input_hash: str | None) -> Trace:
    trace = Trace(run_id="run_fast", agent_name="fast")
    start = trace.add(RunStart(id="e0", run_id="run_fast"))
    call = trace.add(
        ToolCall(
            id="e1",
            run_id="run_fast",
            parent_id=start.id,
            name="measure",
            input=recorded_input,
            input_hash=input_hash,
        )
    )
    trace.add(ToolResult(id="e2", run_id="run_fast", parent_id=call.id, name="measure", output={"ok": 1}))
    return trace


def test_a_live_input_equal_to_an_altered_recorded_input_is_still_rejected_by_its_fingerprint() -> None:
    # The recorded input was changed after hashing: the live call matches the altered bytes exactly.
    trace = _one_call({"x": 2.5, "n": 7}, fingerprint({"x": 2.5, "n": 5}))
    with ReplaySession.from_trace(trace), pytest.raises(ReplayMismatchError) as info:
        measure(2.5, 7)
    assert info.value.code == "invalid_input_fingerprint"


@pytest.mark.parametrize(("x", "n"), [(1e-05, 1), (1e-07, 2**70), (0.5, -(2**64)), (-0.0, 0), (1e22, 2**63)])
def test_inputs_with_band_floats_and_big_ints_replay_and_diverge_by_the_byte_rule(x: float, n: int) -> None:
    trace = _one_call({"x": x, "n": n}, fingerprint({"x": x, "n": n}))
    with ReplaySession.from_trace(trace) as replay:
        assert measure(x, n) == {"ok": 1}
        replay.verify_complete()
    with ReplaySession.from_trace(trace), pytest.raises(ReplayMismatchError) as info:
        measure(x, n + 1)
    assert info.value.code == "input_diverged"
    assert info.value.diagnostic.expected_input_fingerprint == fingerprint({"x": x, "n": n})


def test_an_int_where_a_float_was_recorded_diverges() -> None:
    trace = _one_call({"x": 1.0, "n": 1}, fingerprint({"x": 1.0, "n": 1}))
    with ReplaySession.from_trace(trace), pytest.raises(ReplayMismatchError) as info:
        measure(1, 1)  # type: ignore[arg-type]
    assert info.value.code == "input_diverged"


def test_a_diagnostic_built_after_the_call_was_consumed_still_fingerprints_the_live_input() -> None:
    # The recorded output {"ok": 1} does not fit list[int]: the error is built after the call was consumed
    # and its cached live bytes released, so the fingerprint is computed again, to the same value.
    @trace_tool(name="measure")
    def measure_as_list(x: float, n: int) -> list[int]:
        return []

    live_input = {"x": 2.5, "n": 7}
    trace = _one_call(live_input, fingerprint(live_input))
    with ReplaySession.from_trace(trace) as replay, pytest.raises(ReplayMismatchError) as info:
        measure_as_list(2.5, 7)
    assert info.value.code == "output_annotation_mismatch"
    diagnostic = info.value.diagnostic
    assert diagnostic.actual_input_fingerprint == diagnostic.expected_input_fingerprint
    assert diagnostic.actual_input_fingerprint == fingerprint(live_input)
    assert replay.executed_calls[0].input == live_input


def test_a_matched_call_reports_its_input_without_keeping_the_live_one() -> None:
    # An exact match keeps no live input (the recorded one stands for it): the report is equal to the
    # live input, and a copy the caller may change without touching the recording.
    recorded = {"x": 2.5, "n": 7}
    trace = _one_call(recorded, fingerprint(recorded))
    with ReplaySession.from_trace(trace) as replay:
        measure(2.5, 7)
    (executed,) = replay.executed_calls
    assert executed.input == {"x": 2.5, "n": 7}
    executed.input["n"] = 8
    assert replay.calls[0].input == {"x": 2.5, "n": 7}
    assert replay.executed_calls[0].input == {"x": 2.5, "n": 8}  # the same record, read again


def test_an_ignored_difference_reports_the_live_input_not_the_recorded_one() -> None:
    recorded = {"x": 2.5, "n": 7}
    trace = _one_call(recorded, fingerprint(recorded))
    with ReplaySession.from_trace(trace, ignore={"measure": ["$.n"]}) as replay:
        measure(2.5, 9)
    assert replay.executed_calls[0].input == {"x": 2.5, "n": 9}
    assert [d.path for d in replay.ignored_differences] == ["$.n"]


def test_served_calls_keep_no_live_input_for_an_exact_match() -> None:
    # The memory side of the above (docs/performance.md, "HTTP capture"): nothing of the live call is
    # held per matched call; an inexact match (ignored paths, hybrid live LLM) keeps its live input.
    from stepfork.replay.matching import LiveInput
    from stepfork.replay.plan import extract_recorded_calls
    from stepfork.replay.results import ServedCalls

    (recorded,) = extract_recorded_calls(list(_one_call({"x": 1}, None).events))
    served = ServedCalls()
    served.add(recorded, LiveInput({"x": 1}), "substituted", same_input=True)
    kept = LiveInput({"x": 2})
    served.add(recorded, kept, "substituted")
    assert served._inputs == [None, kept]
    assert [c.input for c in served.executed()] == [{"x": 1}, {"x": 2}]
