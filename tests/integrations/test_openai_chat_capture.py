"""OpenAI Chat Completions through the HTTP capture (issue 11): every SDK surface records and replays.

Real ``openai`` SDK, a fake provider serving realistic JSON and SSE (sealed during replay); results are
compared field by field with their types, and changed prompts, tool schemas and output types diverge at
the call with the JSON path of the first difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pydantic
from capture_harness import assert_same, divergence, record_run, replay_run
from fake_providers import FakeProvider
from integration_helpers import events_of, responses_of
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ParsedChatCompletion

from stepfork.integrations.openai import instrument_openai

MODEL = "gpt-4o-mini"
MESSAGES = [
    {"role": "system", "content": "You are a weather assistant."},
    {"role": "user", "content": "Weather in Paris and Lyon?"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


class WeatherF(pydantic.BaseModel):
    city: str
    fahrenheit: int


def client(fake: FakeProvider) -> openai.OpenAI:
    http = httpx2.Client(transport=fake.transport())
    return instrument_openai(openai.OpenAI(api_key="sk-secret-test-key", http_client=http, max_retries=0))


def aclient(fake: FakeProvider) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=fake.transport())
    return instrument_openai(
        openai.AsyncOpenAI(api_key="sk-secret-test-key", http_client=http, max_retries=0)
    )


def test_create_with_parallel_tool_calls(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> ChatCompletion:
        return c.chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS, temperature=0)

    live = record_run(bundle, agent, client)
    assert [t.function.name for t in live.choices[0].message.tool_calls] == ["get_weather", "get_weather"]
    replayed = replay_run(bundle, agent, client)
    assert isinstance(replayed, ChatCompletion)
    assert_same(live, replayed)
    request, response = (e for e in events_of(bundle) if e["type"].startswith("llm_"))
    assert (request["provider"], request["model"]) == ("openai", MODEL)
    assert request["input"]["method"] == "POST"
    assert request["input"]["path"] == "/v1/chat/completions"
    assert request["input"]["body"]["tools"] == TOOLS
    assert (response["prompt_tokens"], response["completion_tokens"], response["total_tokens"]) == (
        82,
        17,
        99,
    )
    # per-request provider values are kept for the SDK, never in the matched input; no credential anywhere
    assert response["output"]["headers"]["x-request-id"].startswith("req_")
    assert "x-request-id" not in json.dumps(request["input"])
    assert "sk-secret-test-key" not in (bundle / "events.jsonl").read_text()


def test_create_stream_true(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> list[ChatCompletionChunk]:
        stream = c.chat.completions.create(
            model=MODEL, messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        return list(stream)

    live = record_run(bundle, agent, client)
    (response,) = responses_of(bundle)
    sse = response["output"]["sse"]
    assert sse["end"] == "finished"
    assert sse["events"][-1] == {"text": "[DONE]"}
    assert (response["prompt_tokens"], response["completion_tokens"]) == (40, 9)
    replayed = replay_run(bundle, agent, client)
    assert all(isinstance(chunk, ChatCompletionChunk) for chunk in replayed)
    assert_same(live, replayed)


def test_parse_structured_output(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> ParsedChatCompletion[Weather]:
        return c.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Weather)

    live = record_run(bundle, agent, client)
    replayed = replay_run(bundle, agent, client)
    assert replayed.choices[0].message.parsed == Weather(city="Paris", celsius=21)
    assert_same(live, replayed)

    def changed(c: openai.OpenAI) -> Any:
        return c.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=WeatherF)

    error = divergence(bundle, changed, client)
    assert error.code == "input_diverged"
    assert "response_format" in error.path


def test_stream_helper(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> tuple[list[str], ChatCompletion]:
        with c.chat.completions.stream(model=MODEL, messages=MESSAGES) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_completion()
        return kinds, final

    live = record_run(bundle, agent, client)
    assert "content.done" in live[0]
    replayed = replay_run(bundle, agent, client)
    assert_same(live, replayed)


def test_with_raw_response(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> tuple[str | None, ChatCompletion]:
        raw = c.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)
        return raw.headers.get("x-request-id"), raw.parse()

    live = record_run(bundle, agent, client)
    assert live[0] is not None
    assert live[0].startswith("req_")  # fresh per response, served back
    replayed = replay_run(bundle, agent, client)
    assert_same(live, replayed)


def test_with_streaming_response(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> tuple[int, list[Any]]:
        with c.chat.completions.with_streaming_response.create(
            model=MODEL, messages=MESSAGES, stream=True
        ) as response:
            lines = [line.removeprefix("data: ") for line in response.iter_lines() if line]
        # the replayed bytes are re-serialized JSON: equal values (whitespace and key order may differ)
        return response.status_code, [line if line == "[DONE]" else json.loads(line) for line in lines]

    live = record_run(bundle, agent, client)
    assert live[1][-1] == "[DONE]"
    assert replay_run(bundle, agent, client) == live


def test_changed_prompt_and_tool_schema_diverge_at_their_path(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> Any:
        return c.chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS)

    record_run(bundle, agent, client)

    def new_prompt(c: openai.OpenAI) -> Any:
        messages = [MESSAGES[0], {"role": "user", "content": "Weather in Nice?"}]
        return c.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)

    error = divergence(bundle, new_prompt, client)
    assert (error.code, error.path) == ("input_diverged", "$.body.messages[1].content")

    def new_tool(c: openai.OpenAI) -> Any:
        tools = json.loads(json.dumps(TOOLS))
        tools[0]["function"]["description"] = "Weather forecast of a city"
        return c.chat.completions.create(model=MODEL, messages=MESSAGES, tools=tools)

    error = divergence(bundle, new_tool, client)
    assert (error.code, error.path) == ("input_diverged", "$.body.tools[0].function.description")


def test_async_create_parse_and_stream(bundle: Path) -> None:
    async def agent(c: openai.AsyncOpenAI) -> list[Any]:
        plain = await c.chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS)
        parsed = await c.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Weather)
        chunks = [
            chunk
            async for chunk in await c.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
        ]
        async with c.chat.completions.stream(model=MODEL, messages=MESSAGES) as stream:
            final = await stream.get_final_completion()
        raw = await c.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)
        return [plain, parsed, chunks, final, raw.parse()]

    live = record_run(bundle, agent, aclient)
    replayed = replay_run(bundle, agent, aclient)
    assert_same(live, replayed)
