"""A local OpenAI API for the example and the tests: an ``httpx2.MockTransport`` serving realistic responses.

Chat Completions: a request with no ``tool`` message yet answers with a ``get_weather`` tool call, one
with a tool result with the final answer; ``stream=True`` answers as Server-Sent Events (``data: {...}``
lines, then ``data: [DONE]``; the tool call too when the request has tools and no tool result yet), with a
usage chunk when ``stream_options.include_usage`` is set. Responses API: a ``message`` output, or its event
stream (``response.created`` ... ``response.completed``). No network.

Like the real API, every response is new: a fresh ``chatcmpl-``/``resp_``/``msg_`` id, ``created`` from the
clock, a ``system_fingerprint``, tool-call ids (``call_`` + 24 random letters and digits), the stream's
``obfuscation`` padding, and ``x-request-id``, ``openai-processing-ms``, rate-limit and ``date`` headers.
Two recordings of the same agent therefore differ in all of these, as two live recordings do.
"""

from __future__ import annotations

import json
import random
import string
import time
from email.utils import formatdate
from typing import Any

import httpx2

ALNUM = string.ascii_letters + string.digits
_random = random.SystemRandom()


def random_id(prefix: str, size: int) -> str:
    """``prefix`` + ``size`` random letters and digits (the provider's id shape)."""
    return prefix + "".join(_random.choices(ALNUM, k=size))


def headers(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The per-response headers the API sends (request id, processing time, rate limits, date)."""
    return {
        "x-request-id": "req_" + "".join(_random.choices("0123456789abcdef", k=32)),
        "openai-processing-ms": str(_random.randint(150, 900)),
        "openai-version": "2020-10-01",
        "x-ratelimit-remaining-requests": str(_random.randint(4900, 4999)),
        "x-ratelimit-reset-requests": f"{_random.randint(6, 60)}ms",
        "date": formatdate(usegmt=True),
        **(extra or {}),
    }


def _completion(model: str, message: dict[str, Any], finish: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": random_id("chatcmpl-", 29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_" + "".join(_random.choices("0123456789abcdef", k=10)),
        "service_tier": "default",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
    }


def _tool_call_completion(model: str, city: str) -> dict[str, Any]:
    call = {
        "id": random_id("call_", 24),
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }
    message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
    usage = {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}
    return _completion(model, message, "tool_calls", usage)


def _final_completion(model: str, text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text, "refusal": None}
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 12,
        "total_tokens": 132,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    return _completion(model, message, "stop", usage)


def _chat_chunks(model: str, text: str | None, city: str | None, include_usage: bool) -> list[dict[str, Any]]:
    """The chunks of one streamed completion: ``text`` word by word, or a tool call for ``city``."""
    base = {
        "id": random_id("chatcmpl-", 29),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_" + "".join(_random.choices("0123456789abcdef", k=10)),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice], "obfuscation": random_id("", _random.randint(2, 12))}

    if city is not None:
        arguments = json.dumps({"city": city})
        call = {"index": 0, "id": random_id("call_", 24), "type": "function"}
        chunks = [
            chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{**call, "function": {"name": "get_weather", "arguments": ""}}],
                }
            )
        ]
        pieces = [arguments[i : i + 6] for i in range(0, len(arguments), 6)]
        chunks += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
        chunks.append(chunk({}, "tool_calls"))
    else:
        chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
        for i, word in enumerate((text or "").split(" ")):
            chunks.append(chunk({"content": word if i == 0 else " " + word}))
        chunks.append(chunk({}, "stop"))
    if include_usage:
        usage = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}
        chunks.append({**base, "choices": [], "usage": usage, "obfuscation": random_id("", 6)})
    return chunks


def _response(model: str, text: str, response_id: str, message_id: str, created: int) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": message_id,
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 36,
            "output_tokens": 8,
            "total_tokens": 44,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _response_ids() -> tuple[str, str, int]:
    hex_id = "".join(_random.choices("0123456789abcdef", k=48))
    return "resp_" + hex_id, "msg_" + "".join(_random.choices("0123456789abcdef", k=48)), int(time.time())


def _response_events(model: str, text: str) -> list[dict[str, Any]]:
    response_id, message_id, created = _response_ids()
    done = _response(model, text, response_id, message_id, created)
    start = {**done, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "sequence_number": 0, "response": start},
    ]
    for i, word in enumerate(text.split(" ")):
        events.append(
            {
                "type": "response.output_text.delta",
                "sequence_number": len(events),
                "item_id": message_id,
                "output_index": 0,
                "content_index": 0,
                "delta": word if i == 0 else " " + word,
                "logprobs": [],
                "obfuscation": random_id("", _random.randint(2, 12)),
            }
        )
    events.append({"type": "response.completed", "sequence_number": len(events), "response": done})
    return events


def _sse(chunks: list[dict[str, Any]], *, named: bool = False, done: bool = True) -> bytes:
    lines = []
    for chunk in chunks:
        if named:
            lines.append(f"event: {chunk['type']}\n")
        lines.append(f"data: {json.dumps(chunk)}\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


class FakeOpenAI:
    """The fake API; ``requests`` lists the JSON bodies it received, ``answer`` is the final text."""

    def __init__(self, answer: str = "It is 21 degrees and sunny in Paris.") -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        self.requests.append(body)
        model = body.get("model", "gpt-4o-mini")
        sse = headers({"content-type": "text/event-stream; charset=utf-8"})
        if request.url.path.endswith("/chat/completions"):
            messages = body.get("messages", [])
            answered = any(m.get("role") == "tool" for m in messages)
            wants_tool = bool(body.get("tools")) and not answered
            if body.get("stream"):
                include = bool((body.get("stream_options") or {}).get("include_usage"))
                city = "Paris" if wants_tool else None
                chunks = _chat_chunks(model, None if wants_tool else self.answer, city, include)
                return httpx2.Response(200, headers=sse, content=_sse(chunks))
            if answered:
                return httpx2.Response(200, headers=headers(), json=_final_completion(model, self.answer))
            return httpx2.Response(200, headers=headers(), json=_tool_call_completion(model, "Paris"))
        if request.url.path.endswith("/responses"):
            if body.get("stream"):
                events = _response_events(model, self.answer)
                return httpx2.Response(200, headers=sse, content=_sse(events, named=True, done=False))
            return httpx2.Response(
                200, headers=headers(), json=_response(model, self.answer, *_response_ids())
            )
        return httpx2.Response(404, json={"error": {"message": "not found", "type": "invalid_request_error"}})

    def transport(self) -> httpx2.MockTransport:
        """A sync and async mock transport serving this API."""
        return httpx2.MockTransport(self)
