"""Secrets in LLM prompts and streamed chunks through the OpenAI integration never reach the bundle or the
CLI (issue 7 part 3, "streamed chunks"): every corpus shape is sent in a prompt and streamed back split
across chunks' ``delta.content``, and in a non-streamed completion.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rel_support import record_figure, run_cli_batch
from secret_corpus import CORPUS, REGISTERED
from test_secret_leaks import leaks

httpx2 = pytest.importorskip("httpx2")
openai = pytest.importorskip("openai")

from stepfork.integrations.openai import instrument_openai  # noqa: E402
from stepfork.trace import record, register_secret  # noqa: E402

TEXTS = [text for _shape, text, _needle, header in CORPUS if not header]


def _chunk(content: str) -> bytes:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "c2",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }


def serve(request: Any) -> Any:
    body = json.loads(request.content)
    text = body["messages"][0]["content"].removeprefix("echo: ")
    if body.get("stream"):

        def stream() -> Any:
            yield _chunk("here it is: ")
            yield _chunk(text)  # the whole secret in one chunk
            yield _chunk(f" and again {text}")
            yield b"data: [DONE]\n\n"

        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=stream())
    return httpx2.Response(200, json=_completion(f"you said {text}"))


def test_secrets_in_prompts_and_streamed_chunks_never_reach_the_bundle_or_the_cli(tmp_path: Path) -> None:
    client = instrument_openai(
        openai.OpenAI(
            api_key="sk-" + "z" * 40,
            http_client=httpx2.Client(transport=httpx2.MockTransport(serve)),
            max_retries=0,
        )
    )
    register_secret(REGISTERED)  # as the agent would after reading it (process-wide, a random value)
    bundle = tmp_path / "stream.sftrace"
    with record("stream-secrets", output=bundle):
        for text in TEXTS:
            messages = [{"role": "user", "content": f"echo: {text}"}]
            list(client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True))
            client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    found = {f"{p.name}: {shape}" for p in bundle.iterdir() for shape in leaks(p.read_bytes())}
    outcomes, _ = run_cli_batch(
        [["inspect", "--json", "--events", bundle.name], ["inspect", "--events", bundle.name]], cwd=tmp_path
    )
    found |= {f"{o.argv[:2]}: {shape}" for o in outcomes for shape in leaks(o.text.encode())}
    record_figure("secrets-streams", shapes=len(TEXTS), calls=2 * len(TEXTS), occurrences=len(found))
    assert all(o.code == 0 for o in outcomes), [o.text[-300:] for o in outcomes]
    assert not found, sorted(found)
