"""Fake OpenAI and Anthropic HTTP APIs for the transport-capture tests (issue 11): realistic JSON and SSE.

``FakeProvider.transport()`` is an ``httpx2.MockTransport``; ``seal()`` makes it raise on any request, so a
replay that reaches the network fails the test. The payloads follow the providers' API references
(Chat Completions, Responses with its full event sequence, Messages with its event stream). As the real
APIs, every response is new: fresh ``chatcmpl-``/``resp_``/``msg_`` ids, ``created`` from the clock, a
``system_fingerprint``, tool-call ids (``call_`` + 24 letters and digits, ``toolu_01`` + 22), and the
request-id and ``date`` headers.
"""

from __future__ import annotations

import json
import random
import string
import time
from email.utils import formatdate
from typing import Any

import httpx2

SSE = {"content-type": "text/event-stream; charset=utf-8"}
_random = random.SystemRandom()


def random_id(prefix: str, size: int = 24, alphabet: str = string.ascii_letters + string.digits) -> str:
    """``prefix`` + ``size`` random characters: a fresh id per response, as the providers make them."""
    return prefix + "".join(_random.choices(alphabet, k=size))


def openai_headers() -> dict[str, str]:
    """OpenAI's per-response headers: request id, processing time, rate limits, date."""
    return {
        "x-request-id": random_id("req_", 32, "0123456789abcdef"),
        "openai-processing-ms": str(_random.randint(150, 900)),
        "openai-version": "2020-10-01",
        "x-ratelimit-remaining-requests": str(_random.randint(4900, 4999)),
        "date": formatdate(usegmt=True),
    }


def anthropic_headers() -> dict[str, str]:
    """Anthropic's per-response headers: request id, rate limits, date."""
    return {
        "request-id": random_id("req_011C", 20),
        "anthropic-ratelimit-requests-remaining": str(_random.randint(40, 49)),
        "date": formatdate(usegmt=True),
    }


def fingerprint() -> str:
    """A ``system_fingerprint`` (``fp_`` and 10 hex digits)."""
    return random_id("fp_", 10, "0123456789abcdef")


class FakeProvider:
    """A fake provider API. ``requests``: the JSON bodies received; ``answer``: the text answer (or the
    JSON answer of structured outputs, ``structured``)."""

    def __init__(self, answer: str = "It is 21 degrees and sunny in Paris.") -> None:
        self.answer = answer
        self.structured: dict[str, Any] = {"city": "Paris", "celsius": 21}
        self.requests: list[dict[str, Any]] = []
        self.sealed = False

    def seal(self) -> FakeProvider:
        """Make every later request raise (replay must not reach the provider)."""
        self.sealed = True
        return self

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        if self.sealed:
            raise AssertionError(
                f"the fake provider was called during replay: {request.method} {request.url}"
            )
        body = json.loads(request.content or b"{}")
        self.requests.append(body)
        path = request.url.path
        if path.endswith("/chat/completions"):
            return self.chat(body)
        if path.endswith("/responses"):
            return self.responses(body)
        if path.endswith("/messages"):
            return self.messages(body)
        return httpx2.Response(404, json={"error": {"message": "not found", "type": "invalid_request_error"}})

    # -- OpenAI Chat Completions -------------------------------------------------------------------------

    def _text(self, body: dict[str, Any]) -> str:
        structured = body.get("response_format") or (body.get("text") or {}).get("format")
        return json.dumps(self.structured) if structured else self.answer

    def chat(self, body: dict[str, Any]) -> httpx2.Response:
        model = body["model"]
        if body.get("stream"):
            return httpx2.Response(
                200, headers={**SSE, **openai_headers()}, content=_sse(self._chat_chunks(body))
            )
        answered = any(m.get("role") == "tool" for m in body["messages"])
        names = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        wants_tools = body.get("tools") and not answered
        if answered and "final_result" in names:  # pydantic-ai's output tool: answer through it
            final = {"name": "final_result", "arguments": json.dumps(self.structured)}
            call = {"id": random_id("call_"), "type": "function", "function": final}
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [call],
            }
            finish = "tool_calls"
        elif wants_tools:
            calls = [
                {
                    "id": random_id("call_"),
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                }
                for city in ["Paris", "Lyon"]
            ]
            message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": calls}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": self._text(body), "refusal": None}
            finish = "stop"
        completion = {
            "id": random_id("chatcmpl-", 29),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": fingerprint(),
            "service_tier": "default",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": 82,
                "completion_tokens": 17,
                "total_tokens": 99,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
            },
        }
        return httpx2.Response(200, headers=openai_headers(), json=completion)

    def _chat_chunks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        base = {
            "id": random_id("chatcmpl-", 29),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": fingerprint(),
        }
        text = self._text(body)
        pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
        chunks += [
            {**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
            for p in pieces
        ]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}
            chunks.append({**base, "choices": [], "usage": usage})
        return chunks

    # -- OpenAI Responses --------------------------------------------------------------------------------

    def _response(
        self, body: dict[str, Any], status: str = "completed", ids: tuple[str, str, int] | None = None
    ) -> dict[str, Any]:
        text = self._text(body)
        done = status == "completed"
        response_id, message_id, created = ids or _response_ids()
        item = {
            "type": "message",
            "id": message_id,
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }
        return {
            "id": response_id,
            "object": "response",
            "created_at": created,
            "status": status,
            "model": body["model"],
            "output": [item] if done else [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools", []),
            "text": body.get("text", {"format": {"type": "text"}}),
            "usage": {
                "input_tokens": 36,
                "output_tokens": 8,
                "total_tokens": 44,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
            if done
            else None,
        }

    def responses(self, body: dict[str, Any]) -> httpx2.Response:
        if not body.get("stream"):
            return httpx2.Response(200, headers=openai_headers(), json=self._response(body))
        text = self._text(body)
        same = _response_ids()  # one response: its events share its ids
        ids = {"item_id": same[1], "output_index": 0, "content_index": 0}
        empty_item = {
            "type": "message",
            "id": same[1],
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": self._response(body, "in_progress", same)},
            {"type": "response.in_progress", "response": self._response(body, "in_progress", same)},
            {"type": "response.output_item.added", "output_index": 0, "item": empty_item},
            {"type": "response.content_part.added", **ids, "part": part},
        ]
        events += [
            {"type": "response.output_text.delta", **ids, "delta": text[i : i + 7], "logprobs": []}
            for i in range(0, len(text), 7)
        ]
        final = self._response(body, "completed", same)
        events += [
            {"type": "response.output_text.done", **ids, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **ids, "part": {**part, "text": text}},
            {"type": "response.output_item.done", "output_index": 0, "item": final["output"][0]},
            {"type": "response.completed", "response": final},
        ]
        for number, event in enumerate(events):
            event["sequence_number"] = number
        return httpx2.Response(
            200, headers={**SSE, **openai_headers()}, content=_sse(events, named=True, done=False)
        )

    # -- Anthropic Messages ------------------------------------------------------------------------------

    def messages(self, body: dict[str, Any]) -> httpx2.Response:
        model = body["model"]
        if body.get("stream"):
            content, stop, usage = self._content(body)
            events = _content_events(model, content, stop, usage) if body.get("tools") else None
            data = "".join(
                f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
                for e in events or self._message_events(model)
            )
            return httpx2.Response(200, headers={**SSE, **anthropic_headers()}, content=data.encode())
        content, stop, usage = self._content(body)
        return httpx2.Response(200, headers=anthropic_headers(), json=_message(model, content, stop, usage))

    def _content(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str, tuple[int, int]]:
        """The answer's content blocks, stop reason and usage for a Messages request."""
        has_result = any(
            isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
            for m in body["messages"]
        )
        forced = body.get("tool_choice") or {}
        if forced.get("type") == "tool":  # a forced tool (LangChain's with_structured_output): answer with it
            tool_use = {
                "type": "tool_use",
                "id": random_id("toolu_01", 22),
                "name": forced["name"],
                "input": self.structured,
            }
            content, stop, usage = [tool_use], "tool_use", (120, 20)
        elif has_result and "final_result" in [t.get("name") for t in body.get("tools") or []]:
            final = {
                "type": "tool_use",
                "id": random_id("toolu_01", 22),
                "name": "final_result",
                "input": self.structured,
            }
            content, stop, usage = [final], "tool_use", (160, 20)  # pydantic-ai's output tool
        elif body.get("tools") and not has_result:
            tool_use = {
                "type": "tool_use",
                "id": random_id("toolu_01", 22),
                "name": "get_weather",
                "input": {"city": "Paris"},
            }
            content: list[dict[str, Any]] = [{"type": "text", "text": "Let me check the weather."}, tool_use]
            stop, usage = "tool_use", (90, 40)
        else:
            content, stop, usage = [{"type": "text", "text": self.answer}], "end_turn", (140, 15)
        return content, stop, usage

    def _message_events(self, model: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": _message(model, [], None, (25, 1))},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "ping"},
        ]
        for i, word in enumerate(self.answer.split(" ")):
            delta = {"type": "text_delta", "text": word if i == 0 else " " + word}
            events.append({"type": "content_block_delta", "index": 0, "delta": delta})
        return [
            *events,
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 15},
            },
            {"type": "message_stop"},
        ]


def _message(
    model: str, content: list[dict[str, Any]], stop: str | None, usage: tuple[int, int]
) -> dict[str, Any]:
    return {
        "id": random_id("msg_01", 22),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def _response_ids() -> tuple[str, str, int]:
    """A Responses API response's id, its message item's id and its creation time."""
    hexdigits = "0123456789abcdef"
    return random_id("resp_", 48, hexdigits), random_id("msg_", 48, hexdigits), int(time.time())


def _content_events(
    model: str, content: list[dict[str, Any]], stop: str, usage: tuple[int, int]
) -> list[dict[str, Any]]:
    """The Messages event stream of an answer with these content blocks (text and tool_use)."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": _message(model, [], None, (usage[0], 1))}
    ]
    for index, block in enumerate(content):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    return [
        *events,
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage[1]},
        },
        {"type": "message_stop"},
    ]


def _sse(chunks: list[dict[str, Any]], *, named: bool = False, done: bool = True) -> bytes:
    lines = []
    for chunk in chunks:
        if named:
            lines.append(f"event: {chunk['type']}\n")
        lines.append(f"data: {json.dumps(chunk)}\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()
