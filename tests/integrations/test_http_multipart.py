"""Uploads through the HTTP capture (issue 11 break-it review): multipart/form-data request bodies.

The SDKs send files (``audio.transcriptions.create``, ``files.create``, image edits) as multipart bodies
whose boundary is random per request. Recorded as bytes, the input differed at every replay, so an
upload never replayed. The input now holds the form's parts (name, filename, content type, content),
never the boundary: the same upload replays, a changed file or field diverges at its part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
from capture_harness import divergence, record_run, replay_run
from fake_providers import FakeProvider
from integration_helpers import events_of
from openai.types import FileObject
from openai.types.audio import Transcription

from stepfork.integrations.openai import instrument_openai

AUDIO = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\xff\xfe"


def upload_api(fake: FakeProvider, request: httpx2.Request) -> httpx2.Response:
    """The fake OpenAI API's upload endpoints (``fake`` counts the requests and raises once sealed)."""
    if fake.sealed:
        raise AssertionError(f"the fake provider was called during replay: {request.method} {request.url}")
    fake.requests.append({"content-type": request.headers["content-type"]})
    headers = {"x-request-id": "req_upload"}
    if request.url.path.endswith("/audio/transcriptions"):
        return httpx2.Response(200, headers=headers, json={"text": "Weather in Paris?"})
    file = {
        "id": "file-abc123",
        "object": "file",
        "bytes": 120,
        "created_at": 1767225600,
        "filename": "batch.jsonl",
        "purpose": "batch",
        "status": "processed",
    }
    return httpx2.Response(200, headers=headers, json=file)


def client(fake: FakeProvider) -> openai.OpenAI:
    http = httpx2.Client(transport=httpx2.MockTransport(lambda request: upload_api(fake, request)))
    return instrument_openai(openai.OpenAI(api_key="sk-secret-test-key", http_client=http, max_retries=0))


def transcribe(audio: bytes, language: str = "en") -> Any:
    def agent(c: openai.OpenAI) -> Transcription:
        return c.audio.transcriptions.create(
            model="whisper-1", file=("question.wav", audio), language=language
        )

    return agent


def test_an_audio_upload_replays_and_a_changed_file_or_field_diverges_at_its_part(bundle: Path) -> None:
    live = record_run(bundle, transcribe(AUDIO), client)
    assert isinstance(live, Transcription)
    replayed = replay_run(bundle, transcribe(AUDIO), client)
    assert isinstance(replayed, Transcription)
    assert replayed.text == live.text == "Weather in Paris?"

    request = next(e for e in events_of(bundle) if e["type"] == "llm_request")
    assert request["model"] == "whisper-1"  # the form's model field
    parts = request["input"]["body"]["multipart"]
    assert [p["name"] for p in parts] == ["model", "language", "file"]
    assert parts[2]["filename"] == "question.wav"
    assert "boundary" not in str(request["input"]).lower()

    changed = divergence(bundle, transcribe(AUDIO + b"\x00"), client)
    assert changed.code == "input_diverged"
    assert "$.body.multipart[2]" in str(changed)
    field = divergence(bundle, transcribe(AUDIO, language="fr"), client)
    assert "$.body.multipart[1]" in str(field)


def test_a_file_upload_replays_with_the_sdk_s_type(bundle: Path) -> None:
    def agent(c: openai.OpenAI) -> FileObject:
        return c.files.create(file=("batch.jsonl", b'{"custom_id": "1"}\n'), purpose="batch")

    live = record_run(bundle, agent, client)
    replayed = replay_run(bundle, agent, client)
    assert isinstance(replayed, FileObject)
    assert replayed == live
