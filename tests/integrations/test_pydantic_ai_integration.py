"""pydantic-ai integration: StepforkModel around the framework's FunctionModel (issue 6)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest
from integration_helpers import events_of, responses_of
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from stepfork.integrations.pydantic_ai import StepforkModel, instrument_model
from stepfork.replay import ReplaySession
from stepfork.trace import record, trace_tool, validate_bundle

model_calls: list[int] = []


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    model_calls.append(len(messages))
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="call_1")])
    return ModelResponse(parts=[TextPart("Sunny in Paris: no umbrella.")])


@trace_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: sunny, 21C"


def make_agent(model: StepforkModel) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model)
    agent.tool_plain(get_weather)
    return agent


def test_an_agent_run_records_model_requests_and_tools_and_replays_them(bundle: Path) -> None:
    model_calls.clear()
    with record("pydantic-ai", output=bundle):
        live = make_agent(instrument_model(FunctionModel(scripted))).run_sync("Umbrella in Paris?")
    assert model_calls == [1, 3]
    assert validate_bundle(bundle).valid
    kinds = [
        (e["type"], e.get("name") or e.get("model"))
        for e in events_of(bundle)
        if e["type"].endswith("call") or e["type"] == "llm_request"
    ]
    assert [k for k, _ in kinds] == ["llm_request", "tool_call", "llm_request"]
    assert responses_of(bundle)[0]["prompt_tokens"] is not None

    with ReplaySession.from_trace(bundle) as session:
        replayed = make_agent(instrument_model(FunctionModel(scripted))).run_sync("Umbrella in Paris?")
    session.verify_complete()
    assert model_calls == [1, 3]  # the model never ran during replay
    assert replayed.output == live.output
    responses = [m for m in replayed.all_messages() if isinstance(m, ModelResponse)]
    assert isinstance(responses[0].parts[0], ToolCallPart)
    assert [r.parts for r in responses] == [
        m.parts for m in live.all_messages() if isinstance(m, ModelResponse)
    ]


def test_streamed_requests_refuse_to_run_unseen_under_a_session(bundle: Path) -> None:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
        yield "hello"

    agent: Agent[None, str] = Agent(instrument_model(FunctionModel(stream_function=stream)))

    async def main() -> None:
        async with agent.run_stream("hi") as result:
            await result.get_output()

    import asyncio

    with record("stream", output=bundle), pytest.raises(NotImplementedError):
        asyncio.run(main())


def test_a_missing_pydantic_ai_gives_the_install_hint_on_use(monkeypatch: pytest.MonkeyPatch) -> None:
    # the module imports without the SDK (issue 32); its implementation module is the one that needs it
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "stepfork.integrations.pydantic_ai")
    monkeypatch.delitem(sys.modules, "stepfork.integrations._pydantic_ai_model")
    module = importlib.import_module("stepfork.integrations.pydantic_ai")
    with pytest.raises(ImportError, match=r'install "stepfork-trace\[pydantic-ai\]"'):
        module.StepforkModel  # noqa: B018 - reading the name is using it
