"""OpenAI Responses API through the HTTP capture (issue 11): create (plain and streamed), parse, stream,
and the async forms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
import pydantic
from capture_harness import assert_same, divergence, record_run, replay_run
from fake_providers import FakeProvider
from integration_helpers import responses_of
from openai.types.responses import ParsedResponse, Response, ResponseCompletedEvent

from stepfork.integrations.openai import instrument_openai

MODEL = "gpt-4o-mini"


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


class Forecast(pydantic.BaseModel):
    city: str
    celsius: int
    rain: bool


def client(fake: FakeProvider) -> openai.OpenAI:
    http = httpx2.Client(transport=fake.transport())
    return instrument_openai(openai.OpenAI(api_key="sk-test", http_client=http, max_retries=0))


def aclient(fake: FakeProvider) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=fake.transport())
    return instrument_openai(openai.AsyncOpenAI(api_key="sk-test", http_client=http, max_retries=0))


def test_create_plain_and_streamed(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> tuple[Response, list[Any]]:
        plain = c.responses.create(model=MODEL, input="Weather in Paris?", instructions="Be brief.")
        events = list(c.responses.create(model=MODEL, input="Weather in Paris?", stream=True))
        return plain, events

    live = record_run(bundle, agent, client)
    assert isinstance(live[1][-1], ResponseCompletedEvent)
    first, second = responses_of(bundle)
    assert (first["prompt_tokens"], first["completion_tokens"], first["total_tokens"]) == (36, 8, 44)
    assert second["output"]["sse"]["events"][0]["event"] == "response.created"
    assert (second["prompt_tokens"], second["completion_tokens"]) == (36, 8)
    replayed = replay_run(bundle, agent, client)
    assert_same(live, replayed)
    assert replayed[0].output_text == FakeProvider().answer

    def changed(c: openai.OpenAI) -> Any:
        return c.responses.create(model=MODEL, input="Weather in Paris?", instructions="Be verbose.")

    error = divergence(bundle, changed, client)
    assert (error.code, error.path) == ("input_diverged", "$.body.instructions")


def test_parse(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> ParsedResponse[Weather]:
        return c.responses.parse(model=MODEL, input="Weather in Paris?", text_format=Weather)

    live = record_run(bundle, agent, client)
    replayed = replay_run(bundle, agent, client)
    assert replayed.output_parsed == Weather(city="Paris", celsius=21)
    assert_same(live, replayed)

    def changed(c: openai.OpenAI) -> Any:
        return c.responses.parse(model=MODEL, input="Weather in Paris?", text_format=Forecast)

    error = divergence(bundle, changed, client)
    assert error.code == "input_diverged"
    assert error.path.startswith("$.body.text.format")


def test_stream_helper(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> tuple[list[str], Response]:
        with c.responses.stream(model=MODEL, input="Weather in Paris?") as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_response()
        return kinds, final

    live = record_run(bundle, agent, client)
    assert "response.output_text.delta" in live[0]
    assert_same(live, replay_run(bundle, agent, client))


def test_async_forms(bundle: Path) -> None:
    async def agent(c: openai.AsyncOpenAI) -> list[Any]:
        plain = await c.responses.create(model=MODEL, input="Weather in Paris?")
        events = [event async for event in await c.responses.create(model=MODEL, input="hi", stream=True)]
        parsed = await c.responses.parse(model=MODEL, input="Weather in Paris?", text_format=Weather)
        async with c.responses.stream(model=MODEL, input="Weather in Paris?") as stream:
            final = await stream.get_final_response()
        return [plain, events, parsed, final]

    live = record_run(bundle, agent, aclient)
    assert_same(live, replay_run(bundle, agent, aclient))
