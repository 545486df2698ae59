"""OpenAI integration: chat completions and Responses API, sync and async, streaming (issues 6 and 11:
recorded at the HTTP transport)."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from fake_openai import FakeOpenAI
from fake_providers import FakeProvider
from integration_helpers import events_of, responses_of
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseCompletedEvent

from stepfork.integrations.openai import instrument_openai
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import llm_request, record, trace_tool, validate_bundle
from stepfork.trace.integrity import verify_bundle_integrity

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def sync_client(transport: Any) -> openai.OpenAI:
    return instrument_openai(
        openai.OpenAI(api_key="sk-test", http_client=httpx2.Client(transport=transport), max_retries=0)
    )


def async_client(transport: Any) -> openai.AsyncOpenAI:
    return instrument_openai(
        openai.AsyncOpenAI(
            api_key="sk-test", http_client=httpx2.AsyncClient(transport=transport), max_retries=0
        )
    )


def test_without_a_session_the_client_calls_the_api_untouched() -> None:
    fake = FakeOpenAI()
    client = sync_client(fake.transport())
    assert instrument_openai(client) is client  # idempotent
    result = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert isinstance(result, ChatCompletion)
    assert len(fake.requests) == 1


def test_frozen_replay_returns_equal_sdk_objects_without_any_request(bundle: Path) -> None:
    fake = FakeOpenAI()

    def agent(client: openai.OpenAI) -> tuple[ChatCompletion, Response]:
        chat = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, temperature=0)
        resp = client.responses.create(model="gpt-4o-mini", input="hello")
        return chat, resp

    with record("openai", output=bundle):
        live = agent(sync_client(fake.transport()))
    sent = len(fake.requests)
    with ReplaySession.from_trace(bundle) as session:
        replayed = agent(sync_client(fake.transport()))
    session.verify_complete()
    assert len(fake.requests) == sent
    assert isinstance(replayed[0], ChatCompletion)
    assert isinstance(replayed[1], Response)
    assert replayed == live
    assert [r.to_dict() for r in replayed] == [r.to_dict() for r in live]
    assert replayed[0].choices[0].message.tool_calls[0].function.name == "get_weather"


def test_requests_tokens_and_sdk_versions_are_recorded(bundle: Path) -> None:
    with record("openai", output=bundle):
        sync_client(FakeOpenAI().transport()).chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, extra_headers={"X-Trace": "1"}
        )
    request, response = (e for e in events_of(bundle) if e["type"].startswith("llm_"))
    assert (request["provider"], request["model"]) == ("openai", "gpt-4o-mini")
    assert request["input"] == {
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": {},  # X-Trace and the credentials do not change the answer: not part of the input
        "body": {"model": "gpt-4o-mini", "messages": MESSAGES},
    }
    assert (response["prompt_tokens"], response["completion_tokens"], response["total_tokens"]) == (
        82,
        17,
        99,
    )
    versions = json.loads((bundle / "sdk-versions.json").read_text())
    assert versions == {"openai": openai.__version__}
    integrity = json.loads((bundle / "integrity.json").read_text())
    assert "sdk-versions.json" in integrity["files"]
    assert verify_bundle_integrity(bundle).status.value == "verified"
    assert validate_bundle(bundle).valid


def test_a_stream_is_passed_through_as_it_arrives_and_replayed_as_chunks(bundle: Path) -> None:
    produced: list[int] = []

    def serve(request: httpx2.Request) -> httpx2.Response:
        def body() -> Any:
            for i in range(4):
                produced.append(i)
                chunk = {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    with record("stream", output=bundle):
        stream = sync_client(httpx2.MockTransport(serve)).chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, stream=True
        )
        first = next(iter(stream))
        assert produced == [0]  # the first chunk reached the agent before the rest was produced
        live = [first, *stream]
    (response,) = responses_of(bundle)
    assert response["output"]["sse"]["end"] == "finished"
    assert response["output"]["sse"]["event_count"] == 5  # 4 chunks, then [DONE]

    with ReplaySession.from_trace(bundle) as session:
        replayed = list(
            sync_client(httpx2.MockTransport(serve)).chat.completions.create(
                model="gpt-4o-mini", messages=MESSAGES, stream=True
            )
        )
    session.verify_complete()
    assert all(isinstance(chunk, ChatCompletionChunk) for chunk in replayed)
    assert replayed == live
    assert produced == [0, 1, 2, 3]


def _streamed(count: int) -> httpx2.MockTransport:
    """A provider sending ``count`` chunks one network read at a time, then [DONE]."""

    def serve(request: httpx2.Request) -> httpx2.Response:
        def body() -> Any:
            for i in range(count):
                chunk = {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    return httpx2.MockTransport(serve)


def test_a_consumer_breaking_early_leaves_a_valid_bundle_and_replays_the_same_prefix(bundle: Path) -> None:
    def agent(client: openai.OpenAI) -> list[str]:
        seen = []
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
        for chunk in stream:
            seen.append(chunk.choices[0].delta.content)
            if len(seen) == 2:
                break
        stream.close()
        return seen

    with record("break", output=bundle):
        live = agent(sync_client(_streamed(6)))
    assert validate_bundle(bundle).valid
    sse = responses_of(bundle)[0]["output"]["sse"]
    assert (sse["end"], sse["event_count"]) == ("consumer_closed", 2)  # what arrived before the close

    with ReplaySession.from_trace(bundle) as session:
        assert agent(sync_client(FakeProvider().seal().transport())) == live
    session.verify_complete()
    with ReplaySession.from_trace(bundle), pytest.raises(ReplayMismatchError) as info:
        list(
            sync_client(FakeProvider().seal().transport()).chat.completions.create(
                model="gpt-4o-mini", messages=MESSAGES, stream=True
            )
        )
    assert info.value.code == "stream_exhausted"


def test_a_stream_open_when_the_recording_ends_is_recorded_as_left(bundle: Path) -> None:
    with record("open", output=bundle):
        stream = sync_client(_streamed(6)).chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, stream=True
        )
        next(stream)
        kept = stream  # still referenced after the session ends
    assert validate_bundle(bundle).valid
    sse = responses_of(bundle)[0]["output"]["sse"]
    assert (sse["end"], sse["event_count"]) == ("consumer_closed", 1)
    kept.close()
    assert len(responses_of(bundle)) == 1


def test_a_stream_failing_midway_is_recorded_and_replayed_as_the_same_failure(bundle: Path) -> None:
    def serve(request: httpx2.Request) -> httpx2.Response:
        def body() -> Any:
            for i in range(2):
                chunk = {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "delta": {"content": f"w{i}"}}],
                }
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            raise httpx2.ReadError("connection reset by peer")

        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    def agent(client: openai.OpenAI) -> list[Any]:
        got: list[Any] = []
        try:
            for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True):
                got.append(chunk)
        except Exception as exc:
            got.append(exc)
        return got

    with record("fail", output=bundle):
        live = agent(sync_client(httpx2.MockTransport(serve)))
    assert isinstance(live[-1], openai.APIConnectionError)
    sse = responses_of(bundle)[0]["output"]["sse"]
    assert (sse["end"], sse["event_count"]) == ("failed", 2)
    assert sse["error"]["error_type"].endswith("ReadError")
    with ReplaySession.from_trace(bundle):
        replayed = agent(sync_client(FakeProvider().seal().transport()))
    assert replayed[:2] == live[:2]
    # the same transport error again, so the SDK and the agent see what they saw when it was recorded
    assert type(replayed[2]) is type(live[2])
    assert isinstance(replayed[2].__cause__, httpx2.ReadError)


def test_an_api_error_is_recorded_with_its_type_and_raised_again_on_replay(bundle: Path) -> None:
    def serve(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            429, json={"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}}
        )

    with record("429", output=bundle), pytest.raises(openai.RateLimitError):
        sync_client(httpx2.MockTransport(serve)).chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES
        )
    # the 429 response is served again: the SDK raises its own RateLimitError, with the recorded body
    with ReplaySession.from_trace(bundle), pytest.raises(openai.RateLimitError) as info:
        sync_client(FakeProvider().seal().transport()).chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES
        )
    assert info.value.status_code == 429
    assert info.value.code == "rate_limit"


def test_a_recorded_output_that_is_not_an_http_response_is_a_mismatch(bundle: Path) -> None:
    request = {
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": {},
        "body": {"model": "gpt-4o-mini", "messages": MESSAGES},
    }
    with record("bad", output=bundle):
        llm_request(model="gpt-4o-mini", provider="openai", input=request, call=lambda: "not a completion")
    with ReplaySession.from_trace(bundle), pytest.raises(ReplayMismatchError) as info:
        sync_client(FakeOpenAI().transport()).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert info.value.code == "sdk_rebuild_failed"
    assert "not an HTTP response" in str(info.value)


@trace_tool
async def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "celsius": 21}


def test_async_gather_of_llm_calls_and_tools_records_and_replays(bundle: Path) -> None:  # C6
    async def agent(client: openai.AsyncOpenAI) -> list[Any]:
        async def streamed() -> list[Any]:
            stream = await client.responses.create(model="gpt-4o-mini", input="hi", stream=True)
            return [event async for event in stream]

        return list(
            await asyncio.gather(
                client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES),
                get_weather("Paris"),
                streamed(),
            )
        )

    async def run_recording() -> list[Any]:
        async with record("gather", output=bundle):
            return await agent(async_client(FakeOpenAI().transport()))

    live = asyncio.run(run_recording())
    assert validate_bundle(bundle).valid
    assert isinstance(live[2][-1], ResponseCompletedEvent)

    async def run_replay() -> list[Any]:
        async with ReplaySession.from_trace(bundle) as session:
            result = await agent(async_client(FakeOpenAI().transport()))
        session.verify_complete()
        return result

    assert asyncio.run(run_replay()) == live


def test_closing_an_async_stream_from_another_task_keeps_the_recording_valid(bundle: Path) -> None:
    async def serve(request: httpx2.Request) -> httpx2.Response:
        async def body() -> Any:
            for i in range(4):
                chunk = {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "delta": {"content": f"w{i}"}}],
                }
                yield f"data: {json.dumps(chunk)}\n\n".encode()

        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    async def main() -> None:
        async with record("close", output=bundle):
            client = async_client(httpx2.MockTransport(serve))
            stream = await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
            await stream.__anext__()
            await asyncio.create_task(stream.close())
            await get_weather("Paris")

    asyncio.run(main())
    assert validate_bundle(bundle).valid
    sse = responses_of(bundle)[0]["output"]["sse"]
    assert (sse["end"], sse["event_count"]) == ("consumer_closed", 1)
    assert [e["type"] for e in events_of(bundle)][-3:] == ["tool_call", "tool_result", "run_end"]


def test_a_missing_sdk_gives_the_install_hint_on_use(monkeypatch: pytest.MonkeyPatch) -> None:
    # the module imports without the SDK (issue 32; tests/compat/test_reference_integrations_without_sdk.py)
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.delitem(sys.modules, "stepfork.integrations.openai")
    module = importlib.import_module("stepfork.integrations.openai")
    with pytest.raises(
        ImportError, match=r'install "stepfork-trace\[openai\]" to use the OpenAI integration'
    ):
        module.instrument_openai(object())


def test_hybrid_replay_with_a_live_llm_sends_the_request_and_returns_the_live_object(bundle: Path) -> None:
    with record("hybrid", output=bundle):
        sync_client(FakeOpenAI().transport()).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    fake = FakeOpenAI(answer="live answer")
    with ReplaySession.from_trace(bundle, "hybrid", live_llms=["openai/gpt-4o-mini"]) as session:
        result = sync_client(fake.transport()).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    session.verify_complete()
    assert len(fake.requests) == 1
    assert isinstance(result, ChatCompletion)
    assert [c.action for c in session.matched] == ["executed"]
