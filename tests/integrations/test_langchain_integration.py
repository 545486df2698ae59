"""LangChain / LangGraph integration: StepforkChatModel and tools, record and replay (issue 6)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from integration_helpers import events_of, responses_of
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langgraph_agent import ScriptedChatModel, run_agent, scripted_model

from stepfork.integrations.langchain import StepforkChatModel, instrument_chat_model
from stepfork.replay import ReplaySession
from stepfork.trace import record, validate_bundle


def scripted() -> ScriptedChatModel:
    return scripted_model()


def test_a_langgraph_agent_records_and_replays_without_calling_model_or_tool(bundle: Path) -> None:
    with record("langgraph", output=bundle):
        live = run_agent()
    assert live["steps"] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert validate_bundle(bundle).valid
    first = responses_of(bundle)[0]
    assert (first["prompt_tokens"], first["completion_tokens"], first["total_tokens"]) == (30, 8, 38)
    tools = [e for e in events_of(bundle) if e["type"] == "tool_call"]
    assert [(e["name"], e["input"]) for e in tools] == [("get_weather", {"city": "Paris"})]

    exhausted = ScriptedChatModel(messages=iter([]))  # raises if the model runs
    with ReplaySession.from_trace(bundle) as session:
        replayed = run_agent(model=exhausted)
    session.verify_complete()
    assert replayed == live
    assert [(c.kind, c.action) for c in session.executed_calls] == [
        ("llm", "substituted"),
        ("tool", "substituted"),
        ("llm", "substituted"),
    ]


def test_invoke_returns_an_ai_message_rebuilt_from_the_recording(bundle: Path) -> None:
    with record("invoke", output=bundle):
        live = instrument_chat_model(scripted(), name="fake-chat").invoke("hello")
    with ReplaySession.from_trace(bundle):
        replayed = instrument_chat_model(ScriptedChatModel(messages=iter([])), name="fake-chat").invoke(
            "hello"
        )
    assert isinstance(replayed, AIMessage)
    assert replayed.tool_calls == live.tool_calls
    assert replayed.id == live.id


def test_astream_is_recorded_chunk_by_chunk_and_replayed_as_ai_message_chunks(bundle: Path) -> None:
    async def consume(model: StepforkChatModel) -> list[Any]:
        return [chunk async for chunk in model.astream("hello")]

    async def recording() -> list[Any]:
        async with record("astream", output=bundle):
            fake = GenericFakeChatModel(messages=iter([AIMessage(content="one two three")]))
            return await consume(instrument_chat_model(fake, name="fake-chat"))

    async def replay() -> list[Any]:
        async with ReplaySession.from_trace(bundle) as session:
            chunks = await consume(
                instrument_chat_model(GenericFakeChatModel(messages=iter([])), name="fake-chat")
            )
        session.verify_complete()
        return chunks

    live = asyncio.run(recording())
    stream = responses_of(bundle)[0]["output"]["stream"]
    assert (stream["end"], stream["chunk_count"]) == ("finished", len(live))
    replayed = asyncio.run(replay())
    assert all(isinstance(chunk, AIMessageChunk) for chunk in replayed)
    assert "".join(c.content for c in replayed) == "one two three"


def test_a_missing_langchain_gives_the_install_hint_on_use(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    # the module imports without the SDK (issue 32); its implementation module is the one that needs it
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    monkeypatch.delitem(sys.modules, "stepfork.integrations.langchain")
    monkeypatch.delitem(sys.modules, "stepfork.integrations._langchain_model")
    module = importlib.import_module("stepfork.integrations.langchain")
    with pytest.raises(
        ImportError, match=r'install "stepfork-trace\[langchain\]" to use the LangChain integration'
    ):
        module.instrument_chat_model(object())
