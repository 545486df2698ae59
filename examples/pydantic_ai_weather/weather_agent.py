"""pydantic-ai's weather agent, as its docs write it, recorded and replayed by Stepfork (issue 12).

The agent is pydantic-ai's ``weather_agent`` example: ``@agent.tool`` functions whose first parameter is a
``RunContext`` carrying an ``httpx.AsyncClient`` in its deps, a structured ``output_type``, and a model that
asks for several tools in one turn (pydantic-ai runs them concurrently). The only changes: ``@trace_tool``
under each ``@agent.tool`` (optional since pydantic-ai's tools are recorded without it, docs/integrations.md;
kept so the bundles recorded with it stay those this example ships; the ``RunContext`` is left out of the
recorded input either way), the model wrapped with ``instrument_model``, and no network: the model is
pydantic-ai's ``FunctionModel`` (scripted turns) and the demo endpoints are served by an
``httpx.MockTransport``.

    python weather_agent.py record weather.sftrace  # add --overwrite to replace an existing bundle
    stepfork replay weather.sftrace --entrypoint weather_agent:run_agent
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from stepfork.integrations.pydantic_ai import instrument_model
from stepfork.trace import record, record_main, trace_tool

PROMPT = "What is the weather like in London and in Wiltshire?"
INSTRUCTIONS = "Be concise, reply with one sentence."


class LatLng(BaseModel):
    lat: float
    lng: float


class WeatherReport(BaseModel):
    """The agent's structured output (``output_type``)."""

    summary: str
    places: list[str]


@dataclass
class Deps:
    client: httpx.AsyncClient


def build_agent() -> Agent[Deps, WeatherReport]:
    """The docs' weather agent on an instrumented model, with its two context tools."""
    agent: Agent[Deps, WeatherReport] = Agent(
        instrument_model(FunctionModel(scripted_model)),
        instructions=INSTRUCTIONS,
        deps_type=Deps,
        output_type=WeatherReport,
        retries=2,
    )

    @agent.tool
    @trace_tool
    async def get_lat_lng(ctx: RunContext[Deps], location_description: str) -> LatLng:
        """Get the latitude and longitude of a location."""
        r = await ctx.deps.client.get(
            "https://demo-endpoints.pydantic.workers.dev/latlng", params={"location": location_description}
        )
        r.raise_for_status()
        return LatLng.model_validate_json(r.content)

    @agent.tool
    @trace_tool
    async def get_weather(ctx: RunContext[Deps], lat: float, lng: float) -> dict[str, Any]:
        """Get the weather at a location."""
        temp_response, descr_response = await asyncio.gather(
            ctx.deps.client.get(
                "https://demo-endpoints.pydantic.workers.dev/number", params={"min": 10, "max": 30}
            ),
            ctx.deps.client.get(
                "https://demo-endpoints.pydantic.workers.dev/weather", params={"lat": lat, "lng": lng}
            ),
        )
        temp_response.raise_for_status()
        descr_response.raise_for_status()
        return {"temperature": f"{temp_response.text} °C", "description": descr_response.text}

    return agent


def _tool_returns(messages: list[ModelMessage]) -> list[Any]:
    last = messages[-1]
    if not isinstance(last, ModelRequest):
        return []
    return [part.content for part in last.parts if isinstance(part, ToolReturnPart)]


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: two locations at once, then the weather at both at once, then the structured answer."""
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    if turn == 0:
        return ModelResponse(
            parts=[
                ToolCallPart("get_lat_lng", {"location_description": "London"}, tool_call_id="call_ll_1"),
                ToolCallPart("get_lat_lng", {"location_description": "Wiltshire"}, tool_call_id="call_ll_2"),
            ]
        )
    if turn == 1:
        places = _tool_returns(messages)
        return ModelResponse(
            parts=[
                ToolCallPart("get_weather", _coords(place), tool_call_id=f"call_w_{n}")
                for n, place in enumerate(places, 1)
            ]
        )
    reports = [r for r in _tool_returns(messages) if isinstance(r, dict)]
    summary = "; ".join(f"{r['description']}, {r['temperature']}" for r in reports)
    final = info.output_tools[0].name
    return ModelResponse(
        parts=[
            ToolCallPart(final, {"summary": summary, "places": ["London", "Wiltshire"]}, tool_call_id="out")
        ]
    )


def _coords(place: Any) -> dict[str, float]:
    data = place.model_dump() if isinstance(place, BaseModel) else dict(place)
    return {"lat": data["lat"], "lng": data["lng"]}


def demo_endpoints(request: httpx.Request) -> httpx.Response:
    """The demo endpoints the docs' example calls, served locally."""
    path, params = request.url.path, request.url.params
    if path == "/latlng":
        coords = {"London": (51.5, -0.12), "Wiltshire": (51.3, -1.99)}[params["location"]]
        return httpx.Response(200, json={"lat": coords[0], "lng": coords[1]})
    if path == "/number":
        return httpx.Response(200, text="21")
    if path == "/weather":
        return httpx.Response(200, text="Sunny" if float(params["lat"]) > 51.4 else "Drizzle")
    return httpx.Response(404)


async def arun_agent(prompt: str = PROMPT) -> dict[str, Any]:
    """Run the agent with its httpx deps; return the structured output as JSON."""
    async with httpx.AsyncClient(transport=httpx.MockTransport(demo_endpoints)) as client:
        result = await build_agent().run(prompt, deps=Deps(client=client))
    return result.output.model_dump()


def run_agent() -> dict[str, Any]:
    """The replay entrypoint: the agent on the fixed prompt."""
    return asyncio.run(arun_agent())


def record_run(bundle: str, prompt: str = PROMPT, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the agent under ``stepfork.record`` into ``bundle``; return its output.
    An existing bundle is replaced only with ``overwrite`` (else ``TraceStorageError``, code
    ``already_exists``, before the agent runs)."""

    async def main() -> dict[str, Any]:
        name = "pydantic-ai-weather"
        async with record(name, output=bundle, overwrite=overwrite, run_input=prompt) as session:
            output = await arun_agent(prompt)
            session.set_output(output)
        return output

    return asyncio.run(main())


def main(argv: list[str]) -> int:
    """``record BUNDLE.sftrace [--overwrite]``: record, print the result as JSON (exit 2: bad input)."""
    import weather_agent  # record through the imported module (tagged values name their class)

    return record_main(argv, {"record": weather_agent.record_run})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
