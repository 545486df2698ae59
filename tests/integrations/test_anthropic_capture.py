"""Anthropic Messages through the HTTP capture (issue 11): create (plain, streamed), stream(), raw, async."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import Message, RawMessageStartEvent
from capture_harness import assert_same, divergence, record_run, replay_run
from fake_providers import FakeProvider
from integration_helpers import events_of, responses_of

from stepfork.integrations.anthropic import instrument_anthropic
from stepfork.replay import ReplayMismatchError, ReplaySession

MODEL = "claude-sonnet-5-5"
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather of a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def client(fake: FakeProvider) -> anthropic.Anthropic:
    http = httpx2.Client(transport=fake.transport())
    return instrument_anthropic(anthropic.Anthropic(api_key="sk-ant-secret", http_client=http, max_retries=0))


def aclient(fake: FakeProvider) -> anthropic.AsyncAnthropic:
    http = httpx2.AsyncClient(transport=fake.transport())
    return instrument_anthropic(
        anthropic.AsyncAnthropic(api_key="sk-ant-secret", http_client=http, max_retries=0)
    )


def test_create_plain_with_tools(bundle: Path) -> None:
    def agent(c: anthropic.Anthropic) -> Message:
        return c.messages.create(
            model=MODEL, max_tokens=256, messages=MESSAGES, tools=TOOLS, system="Be brief."
        )

    live = record_run(bundle, agent, client)
    assert live.content[1].type == "tool_use"
    replayed = replay_run(bundle, agent, client)
    assert isinstance(replayed, Message)
    assert_same(live, replayed)
    request = next(e for e in events_of(bundle) if e["type"] == "llm_request")
    assert request["provider"] == "anthropic"
    assert request["input"]["headers"] == {"anthropic-version": "2026-10-21"}  # the SDK's API version header
    assert "sk-ant-secret" not in (bundle / "events.jsonl").read_text()
    (response,) = responses_of(bundle)
    assert (response["prompt_tokens"], response["completion_tokens"], response["total_tokens"]) == (
        90,
        40,
        130,
    )

    def new_system(c: anthropic.Anthropic) -> Any:
        return c.messages.create(
            model=MODEL, max_tokens=256, messages=MESSAGES, tools=TOOLS, system="Be verbose."
        )

    assert divergence(bundle, new_system, client).path == "$.body.system"

    def new_schema(c: anthropic.Anthropic) -> Any:
        tools = copy.deepcopy(TOOLS)
        tools[0]["input_schema"]["properties"]["units"] = {"type": "string"}
        return c.messages.create(
            model=MODEL, max_tokens=256, messages=MESSAGES, tools=tools, system="Be brief."
        )

    assert divergence(bundle, new_schema, client).path.startswith("$.body.tools[0].input_schema.properties")


def test_create_streamed_and_stream_helper(bundle: Path) -> None:
    def agent(c: anthropic.Anthropic) -> list[Any]:
        events = list(c.messages.create(model=MODEL, max_tokens=256, messages=MESSAGES, stream=True))
        with c.messages.stream(model=MODEL, max_tokens=256, messages=MESSAGES) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        return [events, text, final]

    live = record_run(bundle, agent, client)
    assert isinstance(live[0][0], RawMessageStartEvent)
    assert live[1] == FakeProvider().answer
    for response in responses_of(bundle):
        assert response["output"]["sse"]["end"] == "finished"
        assert (response["prompt_tokens"], response["completion_tokens"]) == (25, 15)
    assert_same(live, replay_run(bundle, agent, client))


def test_with_raw_response(bundle: Path) -> None:
    def agent(c: anthropic.Anthropic) -> tuple[str | None, Message]:
        raw = c.messages.with_raw_response.create(model=MODEL, max_tokens=256, messages=MESSAGES)
        return raw.headers.get("request-id"), raw.parse()

    live = record_run(bundle, agent, client)
    assert live[0] is not None
    assert live[0].startswith("req_011C")  # fresh per response, served back
    assert_same(live, replay_run(bundle, agent, client))


def test_async_forms(bundle: Path) -> None:
    async def agent(c: anthropic.AsyncAnthropic) -> list[Any]:
        plain = await c.messages.create(model=MODEL, max_tokens=256, messages=MESSAGES, tools=TOOLS)
        stream = await c.messages.create(model=MODEL, max_tokens=256, messages=MESSAGES, stream=True)
        events = [event async for event in stream]
        async with c.messages.stream(model=MODEL, max_tokens=256, messages=MESSAGES) as helper:
            final = await helper.get_final_message()
        raw = await c.messages.with_raw_response.create(model=MODEL, max_tokens=256, messages=MESSAGES)
        return [plain, events, final, await raw.parse()]

    live = record_run(bundle, agent, aclient)
    assert_same(live, replay_run(bundle, agent, aclient))


def test_a_divergence_is_not_retried_nor_wrapped_by_the_sdk_with_default_retries(bundle: Path) -> None:
    def agent(c: anthropic.Anthropic) -> Message:
        return c.messages.create(model=MODEL, max_tokens=256, messages=MESSAGES)

    record_run(bundle, agent, client)
    fake = FakeProvider().seal()
    http = httpx2.Client(transport=fake.transport())
    default_retries = instrument_anthropic(anthropic.Anthropic(api_key="sk-ant", http_client=http))
    with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayMismatchError) as info:
        default_retries.messages.create(model=MODEL, max_tokens=99, messages=MESSAGES)
    assert info.value.path == "$.body.max_tokens"
    assert isinstance(info.value, anthropic.AnthropicError)  # so the SDK let it through untouched
    assert session.divergence_count == 1  # one attempt: not retried as a connection error
