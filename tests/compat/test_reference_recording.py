"""Reference behaviour of recording (REFERENCE-API.md ``stepfork.recorder``; issue 14): the explicit
RecordingSession methods a custom agent loop uses, ``llm_call`` and its handle, scopes, ``serializer=``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from stepfork.recorder import (
    LLMCallHandle,
    RecordingSession,
    active_recorder,
    llm_request,
    record,
    trace_tool,
)
from stepfork.replay import ReplaySession
from stepfork.trace import (
    ErrorEvent,
    EventStatus,
    EventType,
    LLMRequest,
    LLMResponse,
    RunStatus,
    StateChange,
    ToolCall,
    ToolResult,
    Trace,
)


class Money:
    """A value with no JSON form of its own."""

    def __init__(self, cents: int) -> None:
        self.cents = cents


def to_cents(value: object) -> object:
    return {"cents": value.cents} if isinstance(value, Money) else value


def test_explicit_tool_methods_record_the_decorators_shape(tmp_path: Path) -> None:
    with record("loop", output=tmp_path / "r.sftrace") as session:
        call = session.record_tool_call(name="search", input={"q": "paris"})
        result = session.record_tool_result(call, {"hits": 3})
        failing = session.record_tool_call(name="book", input={})
        failure = session.record_tool_failure(failing, TimeoutError("slow"))
    assert isinstance(call, ToolCall)
    assert isinstance(result, ToolResult)
    assert (result.parent_id, result.status, result.output) == (call.id, EventStatus.OK, {"hits": 3})
    assert isinstance(failure, ToolResult)
    assert failure.status == EventStatus.ERROR
    assert set(failure.output) == {"error_type", "message"}
    trace = Trace.load(tmp_path / "r.sftrace")
    errors = [e for e in trace.events if isinstance(e, ErrorEvent)]
    assert errors[0].parent_id == failure.id
    first = [EventType.RUN_START, EventType.TOOL_CALL, EventType.TOOL_RESULT]
    assert [e.type for e in trace.events][:3] == first
    assert call.parent_id == trace.events[0].id


def test_explicit_llm_methods(tmp_path: Path) -> None:
    with record("loop", output=tmp_path / "r.sftrace") as session:
        request = session.record_llm_request(model="m-1", input={"p": 1}, provider="local")
        response = session.record_llm_response(request, {"text": "hi"}, prompt_tokens=3, completion_tokens=2)
        second = session.record_llm_request(model="m-1", input={"p": 2})
        error = session.record_llm_failure(second, RuntimeError("down"))
    assert isinstance(request, LLMRequest)
    assert isinstance(response, LLMResponse)
    assert (response.parent_id, response.model, response.prompt_tokens) == (request.id, "m-1", 3)
    assert isinstance(error, ErrorEvent)
    assert error.parent_id == second.id
    assert Trace.load(tmp_path / "r.sftrace").totals.llm_calls == 2


def test_state_change_error_and_to_json(tmp_path: Path) -> None:
    with record("loop", output=tmp_path / "r.sftrace", serializer=to_cents) as session:
        assert session.to_json(Money(7)) == {"cents": 7}
        session.record_state_change(key="cart", before=[], after=[Money(1)])
        session.record_error("app.Problem", "it broke", details={"code": 3})
    events = Trace.load(tmp_path / "r.sftrace").events
    state = next(e for e in events if isinstance(e, StateChange))
    assert state.after == [{"cents": 1}]
    assert any(isinstance(e, ErrorEvent) and e.error_type == "app.Problem" for e in events)


def test_push_and_pop_scope_parent_the_next_events(tmp_path: Path) -> None:
    with record("loop", output=tmp_path / "r.sftrace") as session:
        outer = session.record_tool_call(name="plan", input={})
        session.push_scope(outer.id)
        inner = session.record_tool_call(name="step", input={})
        session.pop_scope()
        after = session.record_tool_call(name="after", input={})
        with pytest.raises(RuntimeError):
            session.pop_scope()
    assert inner.parent_id == outer.id
    assert after.parent_id == outer.parent_id


def test_llm_call_yields_a_handle(tmp_path: Path) -> None:
    with (
        record("loop", output=tmp_path / "r.sftrace") as session,
        session.llm_call(model="m", input="q") as handle,
    ):
        assert isinstance(handle, LLMCallHandle)
        handle.set_output({"a": 1}, prompt_tokens=1, completion_tokens=2, total_tokens=3, cost_usd=0.5)
    response = next(e for e in Trace.load(tmp_path / "r.sftrace").events if isinstance(e, LLMResponse))
    assert (response.output, response.total_tokens, response.cost_usd) == ({"a": 1}, 3, 0.5)


def test_recording_after_the_session_finished_raises(tmp_path: Path) -> None:
    with record("loop", output=tmp_path / "r.sftrace") as session:
        pass
    with pytest.raises(RuntimeError):
        session.record_tool_call(name="late", input={})


def test_entering_twice_raises(tmp_path: Path) -> None:
    session = RecordingSession("a", output=tmp_path / "r.sftrace")
    with session, pytest.raises(RuntimeError, match="re-entered"), session:
        pass


def test_session_attributes_and_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    session = record("my agent/1")
    assert session.path is None
    assert session.run_id.startswith("run_")
    assert session.agent_name == "my agent/1"
    with session:
        assert active_recorder() is session
    assert session.path == Path(".stepfork/traces") / f"my-agent-1-{session.run_id}.sftrace"
    assert session.trace is not None
    assert session.trace.status == RunStatus.COMPLETED


def test_a_failing_body_records_the_failure_and_propagates(tmp_path: Path) -> None:
    with (
        pytest.raises(ValueError, match="bad"),
        record("a", output=tmp_path / "r.sftrace", run_input={"x": 1}),
    ):
        raise ValueError("bad")
    trace = Trace.load(tmp_path / "r.sftrace")
    assert trace.status == RunStatus.FAILED
    assert trace.failure is not None
    assert trace.events[0].input == {"x": 1}


def test_session_is_inert_inside_a_replay(tmp_path: Path) -> None:
    with record("a", output=tmp_path / "r.sftrace"):
        pass
    with (
        ReplaySession.from_trace(tmp_path / "r.sftrace"),
        record("inner", output=tmp_path / "x.sftrace") as inner,
    ):
        assert inner.record_tool_call(name="t", input={}) is None
    assert inner.path is None
    assert not (tmp_path / "x.sftrace").exists()


def test_the_session_serializer_records_tool_values(tmp_path: Path) -> None:
    @trace_tool
    def price(item: str) -> Money:
        return Money(250)

    with record("a", output=tmp_path / "r.sftrace", serializer=to_cents):
        price("tea")
    result = next(e for e in Trace.load(tmp_path / "r.sftrace").events if isinstance(e, ToolResult))
    assert result.output == {"cents": 250}


def test_a_tool_serializer_converts_its_input_and_replay_matches_it(tmp_path: Path) -> None:
    @trace_tool(serializer=to_cents)
    def charge(amount: Money) -> str:
        return "ok"

    with record("a", output=tmp_path / "r.sftrace"):
        charge(Money(3))
    call = next(e for e in Trace.load(tmp_path / "r.sftrace").events if isinstance(e, ToolCall))
    assert call.input == {"amount": {"cents": 3}}
    with ReplaySession.from_trace(tmp_path / "r.sftrace") as replay:
        assert charge(Money(3)) == "ok"
    replay.verify_complete()


def test_llm_request_serializer(tmp_path: Path) -> None:
    with record("a", output=tmp_path / "r.sftrace"):
        answer = llm_request(model="m", input={"budget": Money(9)}, call=lambda: "yes", serializer=to_cents)
        assert answer == "yes"
    request = next(e for e in Trace.load(tmp_path / "r.sftrace").events if isinstance(e, LLMRequest))
    assert request.input == {"budget": {"cents": 9}}


def test_async_session_and_allm_request_serializer(tmp_path: Path) -> None:
    from stepfork.recorder import allm_request

    async def main() -> object:
        async def call() -> str:
            return "fine"

        async with record("a", output=tmp_path / "r.sftrace"):
            return await allm_request(model="m", input=Money(1), call=call, serializer=to_cents)

    assert asyncio.run(main()) == "fine"
    request = next(e for e in Trace.load(tmp_path / "r.sftrace").events if isinstance(e, LLMRequest))
    assert request.input == {"cents": 1}


def test_trace_tool_rejects_generators() -> None:
    def stream():
        yield 1

    with pytest.raises(ValueError, match="streaming tool"):
        trace_tool(stream)


def test_an_existing_non_empty_output_fails_before_the_agent_runs(tmp_path: Path) -> None:
    """A deliberate difference (docs/decisions.md): the reference ran the agent and failed at save."""
    from stepfork.trace import TraceStorageError

    with record("a", output=tmp_path / "r.sftrace"):
        pass
    ran: list[int] = []
    with pytest.raises(TraceStorageError, match="already exists"), record("a", output=tmp_path / "r.sftrace"):
        ran.append(1)
    assert ran == []
