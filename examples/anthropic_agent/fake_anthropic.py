"""A local Anthropic Messages API for the example and the tests (``httpx2.MockTransport``; no network).

The first request (no ``tool_result`` block yet) answers with a ``tool_use`` block calling
``get_weather``; the next with the final text. ``stream=True`` answers with the Messages API event stream
(``message_start``, ``content_block_start``, ``content_block_delta``..., ``message_delta``,
``message_stop``) as Server-Sent Events.

Like the real API, every response is new: a fresh ``msg_01`` message id, fresh ``toolu_01`` tool-use ids,
and ``request-id``, rate-limit and ``date`` headers per response.
"""

from __future__ import annotations

import json
import random
import string
from email.utils import formatdate
from typing import Any

import httpx2

_random = random.SystemRandom()


def random_id(prefix: str, size: int = 22) -> str:
    """``prefix`` + ``size`` random letters and digits (``msg_01...``, ``toolu_01...``, ``req_011C...``)."""
    return prefix + "".join(_random.choices(string.ascii_letters + string.digits, k=size))


def headers(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The per-response headers the API sends (request id, rate limits, date)."""
    return {
        "request-id": random_id("req_011C", 20),
        "anthropic-ratelimit-requests-remaining": str(_random.randint(40, 49)),
        "anthropic-ratelimit-requests-reset": formatdate(usegmt=True),
        "date": formatdate(usegmt=True),
        **(extra or {}),
    }


def _message(model: str, content: list[dict[str, Any]], stop: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": random_id("msg_01"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def _has_tool_result(messages: list[dict[str, Any]]) -> bool:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(block.get("type") == "tool_result" for block in content):
            return True
    return False


def _events(model: str, text: str) -> list[dict[str, Any]]:
    start = _message(model, [], None, (25, 1))  # type: ignore[arg-type]
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    for i, word in enumerate(text.split(" ")):
        piece = word if i == 0 else " " + word
        events.append(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
        )
    events += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 15},
        },
        {"type": "message_stop"},
    ]
    return events


class FakeAnthropic:
    """The fake API; ``requests`` lists the JSON bodies it received, ``answer`` is the final text."""

    def __init__(self, answer: str = "It is 21 degrees and sunny in Paris.") -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        self.requests.append(body)
        model = body.get("model", "claude-sonnet-5-5")
        if not request.url.path.endswith("/messages"):
            return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error"}})
        if body.get("stream"):
            data = "".join(
                f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in _events(model, self.answer)
            )
            sse = headers({"content-type": "text/event-stream; charset=utf-8"})
            return httpx2.Response(200, headers=sse, content=data.encode())
        if _has_tool_result(body.get("messages", [])):
            content = [{"type": "text", "text": self.answer}]
            return httpx2.Response(
                200, headers=headers(), json=_message(model, content, "end_turn", (140, 15))
            )
        tool_use = {
            "type": "tool_use",
            "id": random_id("toolu_01"),
            "name": "get_weather",
            "input": {"city": "Paris"},
        }
        content = [{"type": "text", "text": "Let me check the weather."}, tool_use]
        return httpx2.Response(200, headers=headers(), json=_message(model, content, "tool_use", (90, 40)))

    def transport(self) -> httpx2.MockTransport:
        """A sync and async mock transport serving this API."""
        return httpx2.MockTransport(self)
