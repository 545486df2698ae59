"""Issue 12, "Framework control flow": signals a framework raises from inside a tool are recorded with their
payload and re-raised as the framework's own exception on replay."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from stepfork.integrations.pydantic_ai import instrument_model
from stepfork.replay import ReplaySession
from stepfork.trace import record, trace_tool
from stepfork.trace.canonical import loads_json
from stepfork.trace.control_flow import describe, rebuild

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

attempts: list[str] = []


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    if turn == 0:
        return ModelResponse(parts=[ToolCallPart("lookup", {"code": "par"}, tool_call_id="c1")])
    if turn == 1:  # after the retry prompt
        return ModelResponse(parts=[ToolCallPart("lookup", {"code": "PAR"}, tool_call_id="c2")])
    return ModelResponse(parts=[TextPart("Paris")])


@trace_tool
def lookup(code: str) -> str:
    """An airport by code; asks the model to retry with an upper-case code."""
    attempts.append(code)
    if code != code.upper():
        raise ModelRetry("use an upper-case IATA code")
    return "Paris-Charles de Gaulle"


def make_agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(instrument_model(FunctionModel(scripted)))
    agent.tool_plain(lookup)
    return agent


def test_model_retry_is_recorded_with_its_message_and_replayed_as_model_retry(tmp_path: Path) -> None:
    path = tmp_path / "retry.sftrace"
    attempts.clear()
    with record("retry", output=path):
        live = make_agent().run_sync("Where is PAR?")
    assert attempts == ["par", "PAR"]
    errors = [
        e for e in map(loads_json, (path / "events.jsonl").read_bytes().splitlines()) if e["type"] == "error"
    ]
    assert errors[0]["details"]["control_flow"] == {
        "kind": "pydantic_ai.model_retry",
        "payload": {"message": "use an upper-case IATA code"},
    }
    attempts.clear()
    with ReplaySession.from_trace(path) as session:
        replayed = make_agent().run_sync("Where is PAR?")
    session.verify_complete()
    assert attempts == []  # served, the retry included
    assert replayed.output == live.output

    # the retry prompt the model saw again is the recorded one (the next request matched it, too)
    def parts(result: Any) -> list[Any]:
        messages = result.all_messages()
        return [(type(p).__name__, getattr(p, "content", None)) for m in messages for p in m.parts]

    assert parts(replayed) == parts(live)
    assert ("ToolReturnPart", "use an upper-case IATA code") in parts(live)  # pydantic-ai 2: a retry outcome


def test_langgraph_interrupt_replays_as_graph_interrupt_and_the_graph_resumes(tmp_path: Path) -> None:
    sys.path.insert(0, str(EXAMPLES / "langgraph_hitl"))
    try:
        import hitl_agent
    finally:
        sys.path.pop(0)
    path = tmp_path / "hitl.sftrace"
    recorded = hitl_agent.record_run(str(path))
    with ReplaySession.from_trace(path) as session:
        replayed = hitl_agent.run_agent()
    session.verify_complete()
    assert replayed == recorded
    assert replayed["asked"] == [{"question": "Book Hotel Lutetia?", "args": {"hotel_name": "Hotel Lutetia"}}]
    assert session.divergence is None


def test_rebuilt_signals_are_the_frameworks_own_classes_with_the_payload() -> None:
    from langgraph.errors import GraphInterrupt, ParentCommand
    from langgraph.types import Command, Interrupt
    from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ToolFailed

    cases: list[Any] = [
        GraphInterrupt([Interrupt(value={"q": 1}, id="abc")]),
        ParentCommand(Command(graph=Command.PARENT, goto="other", update={"k": 1})),
        ModelRetry("again"),
        ToolFailed("no such order"),
        ApprovalRequired(metadata={"why": "cost"}),
        CallDeferred(metadata={"job": 7}),
    ]
    for exc in cases:
        control = describe(exc)
        assert control is not None, exc
        again = rebuild({"control_flow": control})
        assert type(again) is type(exc)
        assert describe(again) == control
    assert describe(ValueError("x")) is None
    assert rebuild({"control_flow": {"kind": "builtins.ValueError", "payload": {}}}) is None


@pytest.mark.parametrize("kind", ["os.system", "langgraph.interrupt"])
def test_a_bundle_cannot_name_what_is_imported(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "langgraph.errors", raising=False)
    monkeypatch.delitem(sys.modules, "langgraph.types", raising=False)
    assert rebuild({"control_flow": {"kind": kind, "payload": {"interrupts": []}}}) is None
