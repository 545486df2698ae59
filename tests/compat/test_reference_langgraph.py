"""Reference LangGraph adapter names (REFERENCE-API.md ``stepfork.integrations.langgraph``; issue 14), on the
real langchain_core with its own fake chat model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool

from stepfork.integrations.langgraph import (
    LangGraphIntegrationError,
    traced_chat_model,
    traced_tool,
)
from stepfork.replay import ReplaySession
from stepfork.trace import LLMRequest, ToolCall, Trace, record


def _model(*texts: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(content=t) for t in texts]))


def test_traced_chat_model_returns_the_same_instance_and_is_idempotent() -> None:
    model = _model("hi")
    assert traced_chat_model(model) is model
    assert traced_chat_model(model) is model
    assert issubclass(LangGraphIntegrationError, ValueError)


def test_a_traced_chat_model_records_and_replays(tmp_path: Path) -> None:
    bundle = tmp_path / "r.sftrace"
    with record("lg", output=bundle):
        live = traced_chat_model(_model("sunny")).invoke("weather?")
    assert live.content == "sunny"
    assert any(isinstance(e, LLMRequest) for e in Trace.load(bundle).events)
    with ReplaySession.from_trace(bundle) as replay:
        replayed = traced_chat_model(_model()).invoke("weather?")  # an exhausted model: must not run
    replay.verify_complete()
    assert replayed.content == "sunny"


def test_traced_tool_returns_a_base_tool_recorded_as_a_tool_boundary(tmp_path: Path) -> None:
    @traced_tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    assert isinstance(get_weather, BaseTool)
    named = traced_tool(lambda city: city, name="echo", description="Echo the city.")
    assert named.name == "echo"
    bundle = tmp_path / "t.sftrace"
    with record("lg", output=bundle):
        assert get_weather.invoke({"city": "Paris"}) == "sunny in Paris"
    call = next(e for e in Trace.load(bundle).events if isinstance(e, ToolCall))
    assert (call.name, call.input) == ("get_weather", {"city": "Paris"})


def test_traced_tool_needs_a_description() -> None:
    def nameless(x: int) -> int:
        return x

    with pytest.raises(LangGraphIntegrationError):
        traced_tool(nameless)
