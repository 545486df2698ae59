"""A local OpenAI Chat Completions API for the MCP example: an ``httpx2.MockTransport`` serving realistic
responses, each with a fresh id, the current ``created`` time and ``x-request-id``/``date`` headers, as
the real API answers. No network, no key.

The first request of a conversation (no ``tool`` message yet) is answered with a call of the first tool
offered, with the city named in the user's question (``... in CITY ...``); the next with a final answer
that quotes the tool's result.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from email.utils import formatdate
from typing import Any

import httpx2


def _completion(model: str, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_4f0b692a78",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 96, "completion_tokens": 18, "total_tokens": 114},
    }


class FakeLLM:
    """The fake API; ``requests`` lists the JSON bodies it received."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        self.requests.append(body)
        headers = {"x-request-id": f"req_{uuid.uuid4().hex}", "date": formatdate(usegmt=True)}
        if not request.url.path.endswith("/chat/completions"):
            return httpx2.Response(404, headers=headers, json={"error": {"message": "not found"}})
        model = body.get("model", "gpt-4o-mini")
        messages = body.get("messages", [])
        results = [m for m in messages if m.get("role") == "tool"]
        if results:
            text = f"Here is what the weather service says: {results[-1]['content']}"
            message = {"role": "assistant", "content": text, "refusal": None}
            return httpx2.Response(200, headers=headers, json=_completion(model, message, "stop"))
        question = next((m["content"] for m in messages if m.get("role") == "user"), "")
        found = re.search(r"\bin ([A-Z][a-z]+)", question)
        tool = body["tools"][0]["function"]["name"]
        call = {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps({"city": found[1] if found else "Paris"})},
        }
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
        return httpx2.Response(200, headers=headers, json=_completion(model, message, "tool_calls"))

    def transport(self) -> httpx2.MockTransport:
        """A mock transport serving this API (sync and async)."""
        return httpx2.MockTransport(self)
