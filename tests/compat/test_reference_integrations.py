"""Reference integration names (REFERENCE-API.md ``stepfork.integrations``; issue 14): the OpenAI
function-call API on the real SDK with a fake transport serving realistic provider JSON."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx2
import openai
import pytest

from stepfork.integrations.openai import (
    CHAT_COMPLETIONS_METHOD,
    OpenAIIntegrationError,
    achat_completions_create,
    chat_completions_create,
)
from stepfork.replay import ReplaySession
from stepfork.trace import LLMRequest, LLMResponse, Trace, record

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "openai_agent"))
from fake_openai import FakeOpenAI

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def test_the_method_constant_and_error_type() -> None:
    assert CHAT_COMPLETIONS_METHOD == "chat.completions.create"
    assert issubclass(OpenAIIntegrationError, ValueError)


def test_chat_completions_create_records_and_replays_a_dict(tmp_path: Path) -> None:
    fake = FakeOpenAI()
    http = httpx2.Client(transport=fake.transport())
    client = openai.OpenAI(api_key="sk-test", http_client=http, max_retries=0)
    bundle = tmp_path / "r.sftrace"
    with record("chat", output=bundle):
        live = chat_completions_create(client, model="gpt-4o-mini", messages=MESSAGES)
    assert isinstance(live, dict)
    assert live["object"] == "chat.completion"
    events = Trace.load(bundle).events
    request = next(e for e in events if isinstance(e, LLMRequest))
    assert (request.provider, request.model) == ("openai", "gpt-4o-mini")
    sent_request = {"model": "gpt-4o-mini", "messages": MESSAGES}
    assert request.input == {"method": "chat.completions.create", "request": sent_request}
    response = next(e for e in events if isinstance(e, LLMResponse))
    assert response.total_tokens is not None
    sent = len(fake.requests)
    with ReplaySession.from_trace(bundle) as replay:
        replayed = chat_completions_create(client, model="gpt-4o-mini", messages=MESSAGES)
    replay.verify_complete()
    assert replayed == live
    assert len(fake.requests) == sent


def test_achat_completions_create_works_on_the_async_client(tmp_path: Path) -> None:
    fake = FakeOpenAI()

    async def main() -> object:
        client = openai.AsyncOpenAI(
            api_key="sk-test", http_client=httpx2.AsyncClient(transport=fake.transport()), max_retries=0
        )
        async with record("chat", output=tmp_path / "r.sftrace"):
            return await achat_completions_create(client, model="gpt-4o-mini", messages=MESSAGES)

    result = asyncio.run(main())
    assert isinstance(result, dict)
    assert result["choices"]


@pytest.mark.parametrize(
    "request_", [{"messages": MESSAGES}, {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}]
)
def test_a_missing_model_or_a_stream_is_refused(request_: dict[str, object]) -> None:
    client = openai.OpenAI(api_key="sk-test", http_client=httpx2.Client(transport=FakeOpenAI().transport()))
    with pytest.raises(OpenAIIntegrationError):
        chat_completions_create(client, **request_)
