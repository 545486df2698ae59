"""An API key the model streams across several chunks is never written or printed (NEWCOMER 16, CASES C5).

Real ``openai`` and ``anthropic`` SDKs on the fake providers (fake_providers.py: realistic SSE, the answer
cut into small deltas as the APIs stream it), each agent written as the SDK's docs write a streamed call.
The recorded deltas join to the answer with the key replaced by ``[REDACTED]``; neither the bundle nor
``stepfork inspect`` holds a piece of the key that joins back into it; the replay streams the redacted
answer, the same text the run's recorded output holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
from fake_providers import FakeProvider

from stepfork.integrations.anthropic import instrument_anthropic
from stepfork.integrations.openai import instrument_openai
from stepfork.replay import ReplaySession
from stepfork.trace import record, validate_bundle

STEPFORK = Path(sys.executable).parent / "stepfork"
KEY = "sk-proj-Zq8X2mNvL4pR7tY1wK9sB3dF6gH0jA5cE8uI2oP"
ANSWER = f"Your key is {KEY}, keep it safe."
REDACTED = "Your key is [REDACTED], keep it safe."
PIECES = {KEY[i : i + 5] for i in range(len(KEY) - 4)}  # any piece a 5- or 7-character delta keeps


class SmallDeltas(FakeProvider):
    """Anthropic's Messages stream with the answer in 5-character text deltas (FakeProvider cuts words)."""

    def _message_events(self, model: str) -> list[dict[str, Any]]:
        events = super()._message_events(model)
        head = [e for e in events if e["type"] in ("message_start", "content_block_start", "ping")]
        tail = [e for e in events if e["type"] in ("content_block_stop", "message_delta", "message_stop")]
        pieces = [self.answer[i : i + 5] for i in range(0, len(self.answer), 5)]
        deltas = [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
            for piece in pieces
        ]
        return [*head, *deltas, *tail]


def chat_agent(fake: FakeProvider) -> str:
    client = openai.OpenAI(
        api_key="sk-local", http_client=httpx2.Client(transport=fake.transport()), max_retries=0
    )
    client = instrument_openai(client)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "What was my key?"}], stream=True
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def responses_agent(fake: FakeProvider) -> str:
    client = openai.OpenAI(
        api_key="sk-local", http_client=httpx2.Client(transport=fake.transport()), max_retries=0
    )
    client = instrument_openai(client)
    with client.responses.stream(model="gpt-4o-mini", input="What was my key?") as stream:
        text = "".join(event.delta for event in stream if event.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert final.output_text == text
    return text


def anthropic_agent(fake: FakeProvider) -> str:
    http = httpx2.Client(transport=fake.transport())
    client = instrument_anthropic(
        anthropic.Anthropic(api_key="sk-ant-local", http_client=http, max_retries=0)
    )
    with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=256, messages=[{"role": "user", "content": "What was my key?"}]
    ) as stream:
        return "".join(stream.text_stream)


def record_and_replay(tmp_path: Path, agent: Any, fake: FakeProvider) -> Path:
    bundle = tmp_path / "run.sftrace"
    with record("stream-agent", output=bundle) as session:
        live = agent(fake)
        session.set_output({"text": live})
    assert live == ANSWER  # the agent saw the key (it was the provider's answer)
    assert validate_bundle(bundle).valid
    with ReplaySession.from_trace(bundle) as replay:
        replayed = agent(fake.seal())
    replay.verify_complete()
    assert replayed == REDACTED  # the stream joins to the redacted answer, as the recorded output says
    return bundle


def assert_nothing_leaks(tmp_path: Path, bundle: Path) -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in bundle.iterdir())
    assert not [piece for piece in PIECES if piece in text]
    output = json.loads((bundle / "events.jsonl").read_text().splitlines()[-1])["output"]
    assert output == {"text": REDACTED}
    for args in (("--events", "--full"), ("--json",)):
        shown = subprocess.run(
            [str(STEPFORK), "inspect", str(bundle), *args], capture_output=True, text=True, check=False
        )
        assert shown.returncode == 0, shown.stderr
        assert not [piece for piece in PIECES if piece in shown.stdout]
    validated = subprocess.run(
        [str(STEPFORK), "validate", str(bundle)], capture_output=True, text=True, check=False
    )
    assert "unredacted_secret" not in validated.stdout + validated.stderr


def test_openai_chat_completions_stream(tmp_path: Path) -> None:
    bundle = record_and_replay(tmp_path, chat_agent, FakeProvider(ANSWER))
    assert_nothing_leaks(tmp_path, bundle)
    response = next(json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()
                    if '"llm_response"' in line)  # fmt: skip
    changed = [p for p in response["redactions"] if p.endswith("/delta/content")]
    assert 2 <= len(changed) <= 8  # only the deltas that carried a piece of the key


def test_openai_responses_stream(tmp_path: Path) -> None:
    assert_nothing_leaks(tmp_path, record_and_replay(tmp_path, responses_agent, FakeProvider(ANSWER)))


def test_anthropic_messages_stream(tmp_path: Path) -> None:
    assert_nothing_leaks(tmp_path, record_and_replay(tmp_path, anthropic_agent, SmallDeltas(ANSWER)))
