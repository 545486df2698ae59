"""LangChain tools with no Stepfork line, called the ways LangChain and LangGraph call them (issue 30).

The fast half of tests/integrations/test_framework_tools.py, in-process on the real ``langchain_core`` and
``langgraph``: a ``@tool`` function, a ``BaseTool`` subclass (its ``_arun`` calling its ``_run``), a tool
taking LangGraph's injected state, called by ``invoke``, ``ainvoke`` and ``ToolNode``, each appending to a
list (its side effect). Under ``record(...)`` each call is one tool call named as the model sees the tool;
a frozen ``ReplaySession`` serves it without running the function, with LangChain building its own
``ToolMessage`` from the recorded result; a changed argument raises ``ReplayMismatchError`` at ``$.city``.
A ``@tool`` over ``@trace_tool`` is recorded once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import pytest
from integration_helpers import events_of
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode

from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import record, trace_tool

RAN: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    RAN.append(f"get_weather({city})")
    return f"{city}: sunny, 21C"


class AirQuality(BaseTool):
    """A tool written as a class, as LangChain's "custom tools" guide writes one."""

    name: str = "get_air_quality"
    description: str = "The air quality index of a city."

    def _run(self, city: str) -> str:
        RAN.append(f"get_air_quality({city})")
        return f"{city}: 42 (good)"

    async def _arun(self, city: str) -> str:
        return self._run(city)


@tool
def plan_day(city: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
    """Plan a day out in a city."""
    RAN.append(f"plan_day({city}, {len(state['messages'])} message)")
    return f"A day in {city}"


@tool
@trace_tool
def get_time(city: str) -> str:
    """The local time in a city (the earlier one line: @tool over @trace_tool)."""
    RAN.append(f"get_time({city})")
    return "12:00"


def tool_calls(bundle: Path) -> list[tuple[str, Any]]:
    return [(e["name"], e["input"]) for e in events_of(bundle) if e["type"] == "tool_call"]


def calls(city: str) -> dict[str, Any]:
    """Every way the agent calls its tools, with ``city``."""
    air = AirQuality()
    message = AIMessage(content="", tool_calls=[{"name": "plan_day", "args": {"city": city}, "id": "call_1"}])
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([plan_day]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return {
        "invoke": get_weather.invoke({"city": city}),
        "ainvoke": asyncio.run(get_weather.ainvoke({"city": city})),
        "class": air.invoke({"city": city}),
        "class async": asyncio.run(air.ainvoke({"city": city})),
        "tool node": graph.compile().invoke({"messages": [message]})["messages"][1:],
        "stacked": get_time.invoke({"city": city}),
    }


@pytest.fixture(autouse=True)
def _forget() -> None:
    RAN.clear()


def test_each_tool_call_is_recorded_once_and_served_without_running_its_function(bundle: Path) -> None:
    with record("langchain-tools", output=bundle):
        live = calls("Paris")
    assert len(RAN) == 6
    assert tool_calls(bundle) == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Paris"}),  # ainvoke of a sync tool: one call, not one per entry
        ("get_air_quality", {"city": "Paris"}),
        ("get_air_quality", {"city": "Paris"}),  # _arun calling _run: one call
        ("plan_day", {"city": "Paris", "$excluded": ["state"]}),  # LangGraph's injected state left out
        ("get_time", {"city": "Paris"}),  # by @trace_tool, once
    ]

    RAN.clear()
    with ReplaySession.from_trace(bundle) as session:
        replayed = calls("Paris")
    session.verify_complete()
    assert RAN == []  # no function ran
    [message] = replayed.pop("tool node")  # LangGraph gives the message a fresh id in every run
    live.pop("tool node")
    assert replayed == live
    assert isinstance(message, ToolMessage)
    assert (message.content, message.tool_call_id) == ("A day in Paris", "call_1")


def test_a_changed_argument_diverges_at_its_path(bundle: Path) -> None:
    with record("langchain-tools", output=bundle):
        get_weather.invoke({"city": "Paris"})
    RAN.clear()
    with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayMismatchError) as raised:
        get_weather.invoke({"city": "Lyon"})
    assert raised.value.code == "input_diverged"
    assert raised.value.diagnostic is not None
    assert raised.value.diagnostic.difference is not None
    assert raised.value.diagnostic.difference.path == "$.city"
    assert session.divergence is raised.value
    assert RAN == []  # refused before the function could run
