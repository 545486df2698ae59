"""Issue 12, "a changed tool argument reported at the right call and path", for pydantic-ai.

Two places a changed argument can come from (docs/decisions.md, "where a changed tool argument is
reported"):

- a pydantic-ai tool's own arguments are written by the model, so agent code changes them only through what
  the model is sent: a new tool parameter is first seen in the tool schema of the next model request, and
  that request is where replay reports it (tests/integrations/test_framework_agents.py, through the CLI);
- an argument the *agent code* computes for a call a tool makes (the weather example's tools calling the
  demo HTTP API with their httpx deps, here through a traced ``demo_api`` helper) is reported at that call
  and the path of the argument when the tool's body runs: a pydantic-ai tool is an instrumented boundary
  (docs/integrations.md, "Agent frameworks"), so a frozen replay serves it and its body, the edit included,
  never runs; a live replay that lets the tools run (``--allow-live-tool``) reports the edit at
  ``demo_api``. In-process, pydantic-ai's weather agent with RunContext and httpx deps.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.function import FunctionModel

from stepfork.integrations.pydantic_ai import instrument_model
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import Trace, record, trace_tool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
API = "https://demo-endpoints.pydantic.workers.dev"


@pytest.fixture(scope="module")
def weather() -> Any:
    sys.path.insert(0, str(EXAMPLES / "pydantic_ai_weather"))
    try:
        import weather_agent
    finally:
        sys.path.pop(0)
    return weather_agent


@trace_tool(exclude={"client"})
async def demo_api(client: httpx.AsyncClient, path: str, params: dict[str, Any]) -> str:
    """One request to the demo endpoints; the client is the RunContext's deps, left out of the input."""
    response = await client.get(API + path, params=params)
    response.raise_for_status()
    return response.text


def build_agent(weather: Any, *, location: Any = str) -> Agent[Any, Any]:
    """The docs' weather agent whose tools call the API through ``demo_api``; ``location`` is the code
    that turns the model's location into the request's (the edit under test changes it)."""
    agent: Agent[Any, Any] = Agent(
        instrument_model(FunctionModel(weather.scripted_model)),
        instructions="Be concise, reply with one sentence.",
        deps_type=weather.Deps,
        output_type=weather.WeatherReport,
        retries=2,
    )

    @agent.tool
    async def get_lat_lng(ctx: RunContext[Any], location_description: str) -> Any:
        """Get the latitude and longitude of a location."""
        text = await demo_api(ctx.deps.client, "/latlng", {"location": location(location_description)})
        return weather.LatLng.model_validate_json(text)

    @agent.tool
    async def get_weather(ctx: RunContext[Any], lat: float, lng: float) -> dict[str, Any]:
        """Get the weather at a location."""
        temperature, description = await asyncio.gather(
            demo_api(ctx.deps.client, "/number", {"min": 10, "max": 30}),
            demo_api(ctx.deps.client, "/weather", {"lat": lat, "lng": lng}),
        )
        return {"temperature": f"{temperature} °C", "description": description}

    return agent


async def run(weather: Any, **edit: Any) -> Any:
    transport = httpx.MockTransport(weather.demo_endpoints)
    async with httpx.AsyncClient(transport=transport) as client:
        result = await build_agent(weather, **edit).run(weather.PROMPT, deps=weather.Deps(client=client))
    return result.output.model_dump()


def test_the_weather_agent_with_traced_api_calls_replays_unchanged(weather: Any, tmp_path: Path) -> None:
    path = tmp_path / "weather.sftrace"

    async def main() -> Any:
        async with record("weather-api", output=path):
            return await run(weather)

    recorded = asyncio.run(main())
    calls = [e for e in Trace.load(path).events if e.type == "tool_call" and e.name == "demo_api"]
    assert sorted(c.input["params"].get("location", "") for c in calls if c.input["path"] == "/latlng") == [
        "London",
        "Wiltshire",
    ]
    assert all(c.input["$excluded"] == ["client"] for c in calls)
    with ReplaySession.from_trace(path) as session:
        replayed = asyncio.run(run(weather))
    session.verify_complete()
    assert replayed == recorded


def test_an_argument_computed_by_agent_code_is_reported_at_its_call_and_path(
    weather: Any, tmp_path: Path
) -> None:
    path = tmp_path / "weather.sftrace"

    async def main() -> Any:
        async with record("weather-api", output=path):
            return await run(weather)

    recorded = asyncio.run(main())
    # frozen: the tools are served, so the edited code in their bodies never runs (nor its requests)
    with ReplaySession.from_trace(path) as session:
        assert asyncio.run(run(weather, location=str.upper)) == recorded
    session.verify_complete()

    tools = ["get_lat_lng", "get_weather"]  # live, the tools' bodies allowed to run: the edit is reported
    live = ReplaySession.from_trace(path, "live", allow_live_tools=tools)
    with pytest.raises(ReplayMismatchError) as caught, live:
        asyncio.run(run(weather, location=str.upper))  # the edit: the code now sends "LONDON"
    error = caught.value
    assert error.code == "input_diverged"
    assert error.diagnostic is not None
    assert error.diagnostic.expected_label == "demo_api"
    assert error.diagnostic.difference is not None
    assert error.diagnostic.difference.path == "$.params.location"
    assert {error.diagnostic.difference.expected, error.diagnostic.difference.actual} in (
        {"London", "LONDON"},
        {"Wiltshire", "WILTSHIRE"},
    )
