"""DESIGN.md "Which calls replay sees": calls nested (by time) in a frozen call are not expected."""

from __future__ import annotations

import asyncio

import pytest

from stepfork.replay import ReplaySession, extract_recorded_calls
from stepfork.trace import RunStart, ToolCall, ToolResult, Trace, llm_request, trace_tool

RAN: list[str] = []


@trace_tool
def inner(x: int) -> int:
    RAN.append("inner")
    return x + 1


@trace_tool
def outer(x: int) -> int:
    RAN.append("outer")
    return inner(x) * 10


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_frozen_replay_skips_calls_made_inside_a_frozen_body(recorder) -> None:
    path = recorder(lambda: outer(1))
    RAN.clear()
    with ReplaySession.from_trace(path) as replay:
        assert outer(1) == 20
        replay.verify_complete()
    assert RAN == []
    assert [c.label for c in replay.calls] == ["outer"]


def test_live_replay_expects_the_nested_calls_of_executed_bodies(recorder) -> None:
    path = recorder(lambda: outer(1))
    RAN.clear()
    with ReplaySession.from_trace(path, mode="live", allow_live_tools={"outer", "inner"}) as replay:
        assert outer(1) == 20
        replay.verify_complete()
    assert RAN == ["outer", "inner"]


def test_hybrid_live_llm_bodies_make_their_nested_tool_calls(recorder) -> None:
    def agent() -> object:
        return llm_request(model="m", input={"q": 1}, call=lambda: {"v": inner(1)})

    path = recorder(agent)
    RAN.clear()
    with ReplaySession.from_trace(path, mode="hybrid", live_llms={"m"}) as replay:
        assert agent() == {"v": 2}
        replay.verify_complete()
    assert RAN == []  # the nested tool stays frozen
    assert [c.action for c in replay.executed_calls] == ["executed", "substituted"]


def test_a_chained_parent_is_not_nesting_when_the_call_came_after_its_result() -> None:
    trace = Trace(run_id="r", agent_name="a")
    trace.add(RunStart(id="e0", run_id="r"))
    trace.add(ToolCall(id="e1", run_id="r", parent_id="e0", name="a", input={}))
    trace.add(ToolResult(id="e2", run_id="r", parent_id="e1", name="a", output=1))
    trace.add(ToolCall(id="e3", run_id="r", parent_id="e2", name="b", input={}))
    trace.add(ToolResult(id="e4", run_id="r", parent_id="e3", name="b", output=2))
    trace.add(
        ToolCall(id="e5", run_id="r", parent_id="e3", name="c", input={})
    )  # after b finished: not nested
    trace.add(ToolResult(id="e6", run_id="r", parent_id="e5", name="c", output=3))
    assert [c.label for c in extract_recorded_calls(trace)] == ["a", "b", "c"]


def test_a_call_recorded_before_its_parent_finished_is_nested() -> None:
    trace = Trace(run_id="r", agent_name="a")
    trace.add(RunStart(id="e0", run_id="r"))
    trace.add(ToolCall(id="e1", run_id="r", parent_id="e0", name="a", input={}))
    trace.add(ToolCall(id="e2", run_id="r", parent_id="e1", name="b", input={}))
    trace.add(ToolResult(id="e3", run_id="r", parent_id="e2", name="b", output=2))
    trace.add(ToolResult(id="e4", run_id="r", parent_id="e1", name="a", output=1))
    assert [c.label for c in extract_recorded_calls(trace)] == ["a"]
    assert [c.label for c in extract_recorded_calls(trace, mode="live")] == ["a", "b"]


def test_legacy_results_pair_by_name_when_parents_are_missing() -> None:
    trace = Trace(run_id="r", agent_name="a")
    trace.add(RunStart(id="e0", run_id="r"))
    trace.add(ToolCall(id="e1", run_id="r", parent_id="e0", name="a", input={}))
    trace.add(ToolResult(id="e2", run_id="r", parent_id="e0", name="a", output=1))
    trace.add(ToolCall(id="e3", run_id="r", parent_id="e0", name="a", input={"n": 2}))
    calls = extract_recorded_calls(trace)
    assert [(c.missing, c.output) for c in calls] == [(False, 1), (True, None)]


def test_c6_concurrent_calls_under_gather_replay_in_the_same_order(recorder) -> None:
    @trace_tool(name="weather")
    async def weather(city: str) -> str:
        return f"sunny in {city}"

    @trace_tool(name="news")
    async def news() -> str:
        return "quiet"

    async def agent() -> list[str]:
        return list(await asyncio.gather(weather("NYC"), weather("SF"), news()))

    path = recorder.run_async(agent)

    async def replay_it() -> list[str]:
        async with ReplaySession.from_trace(path) as replay:
            result = await agent()
            replay.verify_complete()
        return result

    assert asyncio.run(replay_it()) == ["sunny in NYC", "sunny in SF", "quiet"]
