"""pydantic-ai on an HTTP model (OpenAIChatModel, AnthropicModel) through the capture (issue 11): run and
run_sync with tools and an output_type, run_stream, and a changed output type or tool description
diverging at the right path."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pydantic
import pytest
from capture_harness import assert_same, divergence, record_run, replay_run
from fake_providers import FakeProvider
from integration_helpers import events_of
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from stepfork.integrations.pydantic_ai import instrument_model
from stepfork.trace import trace_tool


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


class Forecast(pydantic.BaseModel):
    city: str
    celsius: int
    rain: bool = False


@trace_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: sunny, 21C"


def model(fake: FakeProvider) -> Any:
    client = openai.AsyncOpenAI(
        api_key="sk-test", http_client=httpx2.AsyncClient(transport=fake.transport()), max_retries=0
    )
    return instrument_model(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)))


def weather_agent(output: type[pydantic.BaseModel], description: str = "Current weather of a city.") -> Any:
    async def agent(m: Any) -> Any:
        a = Agent(m, output_type=output, instructions="Answer with the weather.")
        a.tool_plain(description=description)(get_weather)
        result = await a.run("Weather in Paris and Lyon?")
        return result.output, result.all_messages()

    return agent


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_run_with_tools_and_output_type(bundle: Path) -> None:
    agent = weather_agent(Weather)
    live = record_run(bundle, agent, model)
    assert live[0] == Weather(city="Paris", celsius=21)
    request = next(e for e in events_of(bundle) if e["type"] == "llm_request")
    tools = [t["function"]["name"] for t in request["input"]["body"]["tools"]]
    assert tools == ["get_weather", "final_result"]  # the output tool's schema is what the model saw
    # pydantic-ai runs the two parallel tool calls on worker threads, so their order is not fixed; the
    # default ordering (auto) reads that from the recording (ordering="concurrent" alone, which needs
    # overlapping calls, failed about 1 run in 80 under load)
    replayed = replay_run(bundle, agent, model)
    assert replayed[0] == live[0]

    # the model's responses as pydantic-ai built them, provider details included (its message
    # timestamps are the agent's clock at the time, not something the provider sent)
    def responses(messages: list[Any]) -> list[Any]:
        return [
            (m.parts, m.model_name, m.provider_details, m.usage) for m in messages if m.kind == "response"
        ]

    assert_same(responses(live[1]), responses(replayed[1]))
    details = responses(replayed[1])[0][2]
    assert isinstance(details["timestamp"], datetime)  # not the str 0.2.0's wrapper gave back

    error = divergence(bundle, weather_agent(Forecast), model)
    assert error.path.startswith("$.body.tools[1].function.parameters")
    error = divergence(bundle, weather_agent(Weather, "Weather forecast of a city."), model)
    assert error.path == "$.body.tools[0].function.description"


def test_run_stream(bundle: Path) -> None:
    async def agent(m: Any) -> list[str]:
        a = Agent(m)
        async with a.run_stream("Weather in Paris?") as result:
            return [text async for text in result.stream_text(delta=True)]

    live = record_run(bundle, agent, model)
    assert "".join(live) == FakeProvider().answer
    assert replay_run(bundle, agent, model) == live


def anthropic_model(fake: FakeProvider) -> Any:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", http_client=httpx2.AsyncClient(transport=fake.transport()), max_retries=0
    )
    return instrument_model(
        AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(anthropic_client=client))
    )


def sync_weather_agent(
    output: type[pydantic.BaseModel], description: str = "Current weather of a city."
) -> Any:
    """The agent of pydantic-ai's docs run with ``run_sync`` (no event loop of the caller's)."""

    def agent(m: Any) -> Any:
        a = Agent(m, output_type=output, instructions="Answer with the weather.")
        a.tool_plain(description=description)(get_weather)
        result = a.run_sync("Weather in Paris?")
        return result.output, result.all_messages()

    return agent


@pytest.mark.parametrize("make", [model, anthropic_model], ids=["OpenAIChatModel", "AnthropicModel"])
def test_run_sync_records_and_replays(bundle: Path, make: Any) -> None:
    agent = sync_weather_agent(Weather)
    live = record_run(bundle, agent, make)
    assert live[0] == Weather(city="Paris", celsius=21)
    requests = [e for e in events_of(bundle) if e["type"] == "llm_request"]
    assert len(requests) == 2
    assert {e["provider"] for e in requests} == {"openai" if make is model else "anthropic"}
    replayed = replay_run(bundle, agent, make)
    assert_same(live[0], replayed[0])

    def responses(messages: list[Any]) -> list[Any]:
        return [
            (m.parts, m.model_name, m.provider_details, m.usage) for m in messages if m.kind == "response"
        ]

    assert_same(responses(live[1]), responses(replayed[1]))

    tools = "$.body.tools[1].function.parameters" if make is model else "$.body.tools[1].input_schema"
    error = divergence(bundle, sync_weather_agent(Forecast), make)
    assert error.path.startswith(tools)
    error = divergence(bundle, sync_weather_agent(Weather, "Weather forecast of a city."), make)
    described = "$.body.tools[0].function.description" if make is model else "$.body.tools[0].description"
    assert error.path == described
