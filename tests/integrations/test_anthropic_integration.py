"""Anthropic integration: Messages API, sync and async, streaming (issue 6)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import httpx2
from anthropic.types import Message, RawMessageStartEvent
from fake_anthropic import FakeAnthropic
from integration_helpers import responses_of

from stepfork.integrations.anthropic import instrument_anthropic
from stepfork.replay import ReplaySession
from stepfork.trace import record, validate_bundle

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def sync_client(fake: FakeAnthropic) -> anthropic.Anthropic:
    http = httpx2.Client(transport=fake.transport())
    return instrument_anthropic(anthropic.Anthropic(api_key="sk-ant-test", http_client=http, max_retries=0))


def async_client(fake: FakeAnthropic) -> anthropic.AsyncAnthropic:
    http = httpx2.AsyncClient(transport=fake.transport())
    return instrument_anthropic(
        anthropic.AsyncAnthropic(api_key="sk-ant-test", http_client=http, max_retries=0)
    )


def test_messages_replay_as_equal_message_objects_without_requests(bundle: Path) -> None:
    fake = FakeAnthropic()

    def agent(client: anthropic.Anthropic) -> Message:
        return client.messages.create(model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES)

    with record("anthropic", output=bundle):
        live = agent(sync_client(fake))
    sent = len(fake.requests)
    with ReplaySession.from_trace(bundle) as session:
        replayed = agent(sync_client(fake))
    session.verify_complete()
    assert len(fake.requests) == sent
    assert isinstance(replayed, Message)
    assert replayed == live
    assert replayed.content[1].type == "tool_use"
    (response,) = responses_of(bundle)
    assert (response["prompt_tokens"], response["completion_tokens"], response["total_tokens"]) == (
        90,
        40,
        130,
    )
    assert validate_bundle(bundle).valid


def test_an_async_stream_replays_the_same_events_with_stream_token_usage(bundle: Path) -> None:
    async def agent(client: anthropic.AsyncAnthropic) -> list[Any]:
        stream = await client.messages.create(
            model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES, stream=True
        )
        return [event async for event in stream]

    async def recording() -> list[Any]:
        async with record("anthropic-stream", output=bundle):
            return await agent(async_client(FakeAnthropic()))

    async def replay() -> list[Any]:
        async with ReplaySession.from_trace(bundle) as session:
            events = await agent(async_client(FakeAnthropic()))
        session.verify_complete()
        return events

    live = asyncio.run(recording())
    (response,) = responses_of(bundle)
    assert response["output"]["sse"]["end"] == "finished"
    assert (response["prompt_tokens"], response["completion_tokens"]) == (25, 15)
    replayed = asyncio.run(replay())
    assert isinstance(replayed[0], RawMessageStartEvent)
    assert replayed == live
    assert (
        "".join(e.delta.text for e in replayed if e.type == "content_block_delta") == FakeAnthropic().answer
    )
