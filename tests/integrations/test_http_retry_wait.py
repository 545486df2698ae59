"""A rate-limited run replays without its waits (issue 11 break-it review).

The SDKs retry a 429/5xx after the wait the response names (``retry-after``, ``retry-after-ms``) or their
own backoff. Replay served the recorded headers, so a frozen replay of a rate-limited production run slept
as long as the run had waited (up to a minute per retry), for answers already in the bundle. Replay now
serves such responses with ``retry-after-ms: 1``: the same retries, the same results, no waiting. A wait
the SDK would refuse to honour (over a minute: no retry) is served as recorded, so no retry appears.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
import openai._base_client as openai_base_client
import pytest
from capture_harness import record_run, replay_run
from fake_providers import FakeProvider

from stepfork.integrations.openai import instrument_openai


def rate_limited_once(fake: FakeProvider, retry_after: str) -> Any:
    """The fake OpenAI API, answering its first request with a 429 naming ``retry_after`` seconds."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        if not fake.sealed and not fake.requests:
            fake.requests.append({"rate_limited": True})
            error = {"message": "Rate limit reached for gpt-4o-mini", "type": "requests"}
            return httpx2.Response(429, headers={"retry-after": retry_after}, json={"error": error})
        return fake(request)

    return answer


def client_waiting(retry_after: str) -> Any:
    def make(fake: FakeProvider) -> openai.OpenAI:
        http = httpx2.Client(transport=httpx2.MockTransport(rate_limited_once(fake, retry_after)))
        return instrument_openai(openai.OpenAI(api_key="sk-secret-test-key", http_client=http, max_retries=2))

    return make


def agent(c: openai.OpenAI) -> str:
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    return str(c.chat.completions.create(model="gpt-4o-mini", messages=messages).choices[0].message.content)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the SDK asks for (none is really slept)."""
    asked: list[float] = []
    monkeypatch.setattr(openai_base_client.time, "sleep", asked.append)
    return asked


def test_a_recorded_rate_limit_is_retried_at_once_on_replay(bundle: Path, sleeps: list[float]) -> None:
    live = record_run(bundle, agent, client_waiting("20"))
    assert sleeps == [20.0]  # the recording waited as told
    sleeps.clear()
    assert replay_run(bundle, agent, client_waiting("20")) == live
    assert sleeps == [0.001]  # the same retry, at once


def test_a_wait_the_sdk_refuses_is_served_as_recorded(bundle: Path, sleeps: list[float]) -> None:
    def make(fake: FakeProvider) -> openai.OpenAI:
        return client_waiting("3600")(fake)

    def caught(c: openai.OpenAI) -> str:
        try:
            return agent(c)
        except openai.RateLimitError as exc:
            return f"gave up: {exc.response.headers['retry-after']}"

    assert record_run(bundle, caught, make) == "gave up: 3600"
    assert replay_run(bundle, caught, make) == "gave up: 3600"  # no retry appears on replay either
    assert sleeps == []
