"""Small trusted entrypoints that replay the reference's golden bundles (tests/golden in the reference).

Each makes exactly the dependency calls its bundle records, through Stepfork's boundaries; the bodies
raise so that a test would notice if replay ever ran one instead of serving the recording.
"""

from __future__ import annotations

from typing import Any

from stepfork import llm_request, trace_tool


def _offline() -> Any:
    raise RuntimeError("the model must not be called during frozen replay")


@trace_tool
def weather_lookup(city: str) -> dict[str, Any]:
    """A weather tool (never executed under frozen replay)."""
    raise RuntimeError("the weather service must not be called during frozen replay")


@trace_tool
def flight_search(api_key: str, query: str) -> dict[str, Any]:
    """A flight search tool (never executed under frozen replay)."""
    raise RuntimeError("the flight service must not be called during frozen replay")


def weather_agent() -> dict[str, str]:
    """successful_run: the model picks a tool, the tool answers, the agent summarizes."""
    choice = llm_request(
        model="gpt-test",
        input={"messages": [{"content": "Find Kathmandu weather", "role": "user"}]},
        call=_offline,
    )
    assert choice == {"tool": "weather_lookup"}
    report = weather_lookup("Kathmandu")
    return {"answer": f"{report['condition'].capitalize()} and {report['temperature_c']}C"}


def weather_agent_changed() -> dict[str, str]:
    """successful_run with a changed summary: the output diverges from the recording."""
    result = weather_agent()
    return {"answer": result["answer"].upper()}


def weather_agent_other_city() -> dict[str, str]:
    """successful_run, but asks about another city: the LLM input diverges at call #0."""
    llm_request(
        model="gpt-test",
        input={"messages": [{"content": "Find Pokhara weather", "role": "user"}]},
        call=_offline,
    )
    return {"answer": "?"}


def weather_agent_stops_early() -> dict[str, str]:
    """successful_run, but never calls the tool: the replay ends with a recorded call unconsumed."""
    llm_request(
        model="gpt-test",
        input={"messages": [{"content": "Find Kathmandu weather", "role": "user"}]},
        call=_offline,
    )
    return {"answer": "Clear and 22C"}


def flight_agent() -> dict[str, Any]:
    """failed_tool_run: the search timed out when recorded; replay raises the recorded failure."""
    return flight_search(api_key="sk-live-0123456789abcdef", query="Kathmandu flights")


def draft_agent() -> Any:
    """failed_llm_run: the model was unavailable when recorded."""
    return llm_request(
        model="gpt-test",
        input={"messages": [{"content": "Draft response", "role": "user"}]},
        call=_offline,
    )


def weather_agent_other_city_recovers() -> dict[str, str]:
    """successful_run, but asks about another city, catches the divergence and completes anyway."""
    try:
        weather_agent_other_city()
    except Exception:
        return {"answer": "fallback", "key": "sk-live-0123456789abcdef"}
    return {"answer": "unreachable"}


def weather_agent_asks_again() -> dict[str, str]:
    """successful_run, then one more tool call the recording does not have (a call past the end)."""
    result = weather_agent()
    weather_lookup("Pokhara")
    return result


def weather_agent_exits() -> None:
    """successful_run, then ``sys.exit(3)``: the entrypoint raises SystemExit."""
    import sys

    weather_agent()
    sys.exit(3)


def weather_agent_interrupted() -> dict[str, str]:
    """successful_run, interrupted by a real SIGINT (Ctrl-C) after the first call."""
    import os
    import signal

    llm_request(
        model="gpt-test",
        input={"messages": [{"content": "Find Kathmandu weather", "role": "user"}]},
        call=_offline,
    )
    os.kill(os.getpid(), signal.SIGINT)
    return weather_agent()


async def async_weather_agent() -> dict[str, str]:
    """successful_run through an ``async def`` entrypoint (run with asyncio.run by the CLI)."""
    return weather_agent()


NOT_CALLABLE = {"answer": "a dict, not a function"}
