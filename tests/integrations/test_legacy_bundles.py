"""Bundles recorded with 0.2.0's SDK-level integrations still replay through the HTTP capture (issue 11).

The bundles in data/ were recorded before the change (data/PROVENANCE.md) by the agents below; they are
replayed here with the same agents on today's ``instrument_openai``/``instrument_anthropic``, with a
provider that raises if called.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from fake_providers import FakeProvider

from stepfork.integrations.anthropic import instrument_anthropic
from stepfork.integrations.openai import instrument_openai
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import trace_tool

DATA = Path(__file__).resolve().parent / "data"
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
ANSWER = "It is 21 degrees and sunny in Paris."


@trace_tool
def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "celsius": 21}


def openai_agent(client: openai.OpenAI) -> dict[str, Any]:
    first = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, temperature=0)
    call = first.choices[0].message.tool_calls[0]
    weather = get_weather("Paris")
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            *MESSAGES,
            {"role": "assistant", "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": str(weather)},
        ],
        stream=True,
        stream_options={"include_usage": True},
    )
    answer = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    summary = client.responses.create(model="gpt-4o-mini", input="Summarize: " + answer)
    return {"tool": call.function.name, "answer": answer, "summary": summary.output_text}


def anthropic_agent(client: anthropic.Anthropic) -> dict[str, Any]:
    first = client.messages.create(model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES)
    events = list(
        client.messages.create(model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES, stream=True)
    )
    streamed = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    return {"first": first.content[0].text, "streamed": streamed}


def sealed_openai() -> openai.OpenAI:
    http = httpx2.Client(transport=FakeProvider().seal().transport())
    return instrument_openai(openai.OpenAI(api_key="sk-test", http_client=http, max_retries=0))


def sealed_anthropic() -> anthropic.Anthropic:
    http = httpx2.Client(transport=FakeProvider().seal().transport())
    return instrument_anthropic(anthropic.Anthropic(api_key="sk-ant-test", http_client=http, max_retries=0))


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    for name in ("openai-0.2.0.sftrace", "anthropic-0.2.0.sftrace"):
        shutil.copytree(DATA / name, tmp_path / name)
    return tmp_path


def test_an_openai_bundle_of_0_2_0_replays_with_the_same_results(legacy: Path) -> None:
    with ReplaySession.from_trace(legacy / "openai-0.2.0.sftrace") as session:
        result = openai_agent(sealed_openai())
    session.verify_complete()
    assert result == {"tool": "get_weather", "answer": ANSWER, "summary": ANSWER}


def test_an_anthropic_bundle_of_0_2_0_replays_with_the_same_results(legacy: Path) -> None:
    with ReplaySession.from_trace(legacy / "anthropic-0.2.0.sftrace") as session:
        result = anthropic_agent(sealed_anthropic())
    session.verify_complete()
    assert result == {"first": "Let me check the weather.", "streamed": ANSWER}


def test_a_changed_prompt_still_diverges_on_a_0_2_0_bundle(legacy: Path) -> None:
    with (
        ReplaySession.from_trace(legacy / "anthropic-0.2.0.sftrace"),
        pytest.raises(ReplayMismatchError) as info,
    ):
        sealed_anthropic().messages.create(
            model="claude-sonnet-5-5", max_tokens=256, messages=[{"role": "user", "content": "Hi"}]
        )
    assert info.value.code == "input_diverged"
    assert info.value.path == "$.request.messages[0].content"
