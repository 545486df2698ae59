"""The replay rules of REFERENCE-API.md ``stepfork.replay`` and ``stepfork.assertions`` (issue 14), on a
trace built by hand as the reference's users build them."""

from __future__ import annotations

import asyncio

import pytest

from stepfork.assertions import (
    assert_max_steps,
    assert_tool_call_count,
    assert_tool_called,
    assert_tool_not_called,
    assert_tool_sequence,
    assert_trajectory,
)
from stepfork.recorder import llm_request, trace_tool
from stepfork.replay import (
    RecordedDependencyError,
    ReplayError,
    ReplayExhaustedError,
    ReplayMismatchError,
    ReplayPolicyError,
    ReplaySession,
    active_replay,
)
from stepfork.trace import (
    ErrorEvent,
    LLMRequest,
    LLMResponse,
    ReplayPolicy,
    RunEnd,
    RunStart,
    ToolCall,
    ToolResult,
    Trace,
)


@trace_tool
def search(query: str) -> str:
    raise RuntimeError("the live tool must not run")


@trace_tool(name="book")
def book(flight: str) -> str:
    raise RuntimeError("the live tool must not run")


def build(*, failing: bool = False) -> Trace:
    trace = Trace(agent_name="hand")
    start = trace.add(RunStart())
    request = trace.add(LLMRequest(model="m-1", provider="p", input={"q": 1}, parent_id=start.id))
    trace.add(LLMResponse(output="search", parent_id=request.id))
    call = trace.add(ToolCall(name="search", input={"query": "paris"}, parent_id=start.id))
    if failing:
        result = trace.add(
            ToolResult(name="search", output={"error_type": "Timeout", "message": "slow"}, status="error",
                       parent_id=call.id)
        )  # fmt: skip
        trace.add(ErrorEvent(error_type="Timeout", message="slow", parent_id=result.id))
    else:
        trace.add(ToolResult(name="search", output="found", parent_id=call.id))
    trace.add(RunEnd(run_status="completed", parent_id=start.id))
    return trace


def agent() -> str:
    llm_request(model="m-1", provider="p", input={"q": 1}, call=lambda: "live")
    return search("paris")


def test_frozen_replay_serves_the_recording_and_sets_active_replay() -> None:
    with ReplaySession(build(), mode=ReplayPolicy.FROZEN) as replay:
        assert active_replay() is replay
        assert agent() == "found"
    assert active_replay() is None
    replay.verify_complete()
    assert [c.label for c in replay.executed_calls] == ["p/m-1", "search"]
    assert replay.summary.remaining == ()


def test_constructor_errors_are_value_errors() -> None:
    trace = build()
    with pytest.raises(ValueError, match="requires explicit live_llms"):
        ReplaySession(trace, mode="hybrid")
    with pytest.raises(ValueError, match="only valid with mode='live'"):
        ReplaySession(trace, mode="frozen", allow_live_tools={"search"})
    with pytest.raises(ValueError, match="not found in trace"):
        ReplaySession(trace, mode="live", allow_live_tools={"nope"})
    with pytest.raises(ValueError):
        ReplaySession(trace, mode="sideways")


def test_re_entering_raises_replay_error() -> None:
    replay = ReplaySession(build(), mode="frozen")
    with replay, pytest.raises(ReplayError), replay:
        pass


def test_calls_outside_the_session_are_not_active() -> None:
    replay = ReplaySession(build(), mode="frozen")
    with pytest.raises(ReplayError, match="not active"):
        replay.before_tool(name="search", input={"query": "paris"})


def test_an_unconsumed_recording_fails_verify_complete() -> None:
    with ReplaySession(build(), mode="frozen") as replay:
        llm_request(model="m-1", provider="p", input={"q": 1}, call=lambda: "live")
    with pytest.raises(ReplayMismatchError, match="replay ended before consuming 1"):
        replay.verify_complete()


def test_an_extra_call_is_exhausted() -> None:
    with ReplaySession(build(), mode="frozen"):
        agent()
        with pytest.raises(ReplayExhaustedError, match="already consumed"):
            search("again")


def test_a_different_tool_or_input_is_a_mismatch() -> None:
    with ReplaySession(build(), mode="frozen"):
        llm_request(model="m-1", provider="p", input={"q": 1}, call=lambda: "live")
        with pytest.raises(ReplayMismatchError, match="expected tool"):
            book("x")
    with ReplaySession(build(), mode="frozen") as replay:
        llm_request(model="m-1", provider="p", input={"q": 1}, call=lambda: "live")
        with pytest.raises(ReplayMismatchError, match="input diverged"):
            search("rome")
    assert isinstance(replay.divergence, ReplayMismatchError)


def test_forbidden_mode_is_a_policy_error() -> None:
    with ReplaySession(build(), mode="forbidden"), pytest.raises(ReplayPolicyError):
        agent()


def test_a_recorded_failure_raises_recorded_dependency_error() -> None:
    with ReplaySession(build(failing=True), mode="frozen"), pytest.raises(RecordedDependencyError) as info:
        agent()
    assert (info.value.kind, info.value.name, info.value.error_type) == ("tool", "search", "Timeout")


def test_async_replay_context_manager() -> None:
    async def main() -> str:
        async with ReplaySession(build(), mode="frozen"):
            return agent()

    assert asyncio.run(main()) == "found"


def test_assertions_on_a_finished_replay() -> None:
    with ReplaySession(build(), mode="frozen") as replay:
        agent()
    assert_tool_called(replay, "search")
    assert_tool_not_called(replay, "book")
    assert_tool_call_count(replay, "search", 1)
    assert_tool_sequence(replay, ["search"])
    assert_max_steps(replay, 2)
    assert_trajectory(replay, {"called": ["search"], "counts": {"search": 1}, "max_steps": 2})
    with pytest.raises(AssertionError, match="expected tool 'book' to be called"):
        assert_tool_called(replay, "book")
    with pytest.raises(ValueError):
        assert_tool_call_count(replay, "search", True)
    with pytest.raises(ValueError):
        assert_trajectory(replay, {"unknown": 1})


def test_assertions_fail_first_on_an_incomplete_replay() -> None:
    with ReplaySession(build(), mode="frozen") as replay:
        llm_request(model="m-1", provider="p", input={"q": 1}, call=lambda: "live")
    with pytest.raises(AssertionError, match="stepfork replay incomplete"):
        assert_tool_not_called(replay, "book")
