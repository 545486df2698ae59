"""A local OpenAI API for the example and the tests: an ``httpx2.MockTransport`` serving realistic responses.

Chat Completions: the first request (no ``tool`` message yet) answers with a ``get_weather`` tool call,
the next with a final answer; ``stream=True`` answers as Server-Sent Events (``data: {...}`` lines, then
``data: [DONE]``), with a usage chunk when ``stream_options.include_usage`` is set. Responses API: a
``message`` output, or its event stream (``response.created`` ... ``response.completed``). No network.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

CREATED = 1767225600  # 2026-01-01T00:00:00Z


def _tool_call_completion(model: str, city: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-tool1",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_4f0b692a78",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": "call_weather_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                        }
                    ],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
    }


def _final_completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-final1",
        "object": "chat.completion",
        "created": CREATED + 1,
        "model": model,
        "system_fingerprint": "fp_4f0b692a78",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 12,
            "total_tokens": 132,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }


def _chat_chunks(model: str, text: str, include_usage: bool) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-stream1", "object": "chat.completion.chunk", "created": CREATED, "model": model}
    words = text.split(" ")
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    for i, word in enumerate(words):
        piece = word if i == 0 else " " + word
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if include_usage:
        chunks.append(
            {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49},
            }
        )
    return chunks


def _response(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "resp_01",
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": "msg_01",
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


def _response_events(model: str, text: str) -> list[dict[str, Any]]:
    done = _response(model, text)
    created = {**done, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "sequence_number": 0, "response": created},
    ]
    for i, word in enumerate(text.split(" ")):
        events.append(
            {
                "type": "response.output_text.delta",
                "sequence_number": len(events),
                "item_id": "msg_01",
                "output_index": 0,
                "content_index": 0,
                "delta": word if i == 0 else " " + word,
                "logprobs": [],
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
        sse = {"content-type": "text/event-stream"}
        if request.url.path.endswith("/chat/completions"):
            if body.get("stream"):
                include = bool((body.get("stream_options") or {}).get("include_usage"))
                return httpx2.Response(
                    200, headers=sse, content=_sse(_chat_chunks(model, self.answer, include))
                )
            messages = body.get("messages", [])
            if any(m.get("role") == "tool" for m in messages):
                return httpx2.Response(200, json=_final_completion(model, self.answer))
            return httpx2.Response(200, json=_tool_call_completion(model, "Paris"))
        if request.url.path.endswith("/responses"):
            if body.get("stream"):
                return httpx2.Response(
                    200,
                    headers=sse,
                    content=_sse(_response_events(model, self.answer), named=True, done=False),
                )
            return httpx2.Response(200, json=_response(model, self.answer))
        return httpx2.Response(404, json={"error": {"message": "not found", "type": "invalid_request_error"}})

    def transport(self) -> httpx2.MockTransport:
        """A sync and async mock transport serving this API."""
        return httpx2.MockTransport(self)
