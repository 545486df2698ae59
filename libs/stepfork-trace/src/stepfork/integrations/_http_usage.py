"""Token usage of recorded HTTP responses, for every provider the capture names (issue 30).

The ``llm_response`` token fields (``prompt_tokens``, ``completion_tokens``, ``total_tokens``) come from the
usage object each provider puts in its response body or stream events:

- OpenAI and the APIs copying it (Azure, Groq, Mistral, DeepSeek, vLLM, LiteLLM...): ``usage``
  (Groq's stream: ``x_groq.usage``), ``prompt_tokens`` / ``completion_tokens`` / ``total_tokens``;
- OpenAI Responses, Anthropic: ``usage``, ``response.usage``, ``message.usage``, ``input_tokens`` /
  ``output_tokens``;
- Gemini, Vertex AI: ``usageMetadata``, ``promptTokenCount`` / ``candidatesTokenCount`` (+
  ``thoughtsTokenCount``) / ``totalTokenCount``;
- Bedrock ``converse`` (``converse_stream``: its ``metadata`` event): ``usage``, ``inputTokens`` /
  ``outputTokens`` / ``totalTokens``;
- Cohere v2 (its stream: ``message-end``'s ``delta.usage``) and v1 (``meta``): ``tokens`` (else
  ``billed_units``), ``input_tokens`` / ``output_tokens``.

Later values win, key by key (a stream's last usage is its final count); a total the provider does not
give is the sum of the other two. Pure data, no HTTP library import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["UsageTotals", "body_usage", "events_usage"]


def _num(usage: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


class UsageTotals:
    """Token counts gathered from usage objects in provider order (later values win)."""

    def __init__(self) -> None:
        self.prompt: int | None = None
        self.completion: int | None = None
        self.total: int | None = None

    def add(self, usage: Any) -> None:
        """Take the counts of one usage object (the key names of the module docstring's table)."""
        if not isinstance(usage, dict) or not usage:
            return
        prompt = _num(usage, "prompt_tokens", "input_tokens", "inputTokens")
        completion = _num(usage, "completion_tokens", "output_tokens", "outputTokens")
        if prompt is None and completion is None:  # Cohere: the counts one level down
            for inner in (usage.get("tokens"), usage.get("billed_units")):
                if isinstance(inner, dict) and (_num(inner, "input_tokens", "output_tokens") is not None):
                    prompt, completion = _num(inner, "input_tokens"), _num(inner, "output_tokens")
                    break
        self.prompt = prompt if prompt is not None else self.prompt
        self.completion = completion if completion is not None else self.completion
        self.total = _num(usage, "total_tokens", "totalTokens")

    def add_gemini(self, metadata: Any) -> None:
        """Take the counts of a Gemini ``usageMetadata`` (thinking tokens count as output)."""
        if not isinstance(metadata, dict) or not metadata:
            return
        prompt = _num(metadata, "promptTokenCount")
        candidates = _num(metadata, "candidatesTokenCount")
        thoughts = _num(metadata, "thoughtsTokenCount")
        completion = candidates if thoughts is None else (candidates or 0) + thoughts
        self.prompt = prompt if prompt is not None else self.prompt
        self.completion = completion if completion is not None else self.completion
        self.total = _num(metadata, "totalTokenCount")

    def add_body(self, body: Any) -> None:
        """Take the usage of a response body or stream event (``usage``, ``message.usage``,
        ``response.usage``, ``delta.usage``, ``x_groq.usage``, ``meta``, ``usageMetadata``)."""
        if not isinstance(body, dict):
            return
        holders = (body, body.get("message"), body.get("response"), body.get("delta"), body.get("x_groq"))
        for holder in holders:
            if isinstance(holder, dict):
                self.add(holder.get("usage"))
        meta = body.get("meta")
        if isinstance(meta, dict) and ("tokens" in meta or "billed_units" in meta):
            self.add(meta)
        if "usageMetadata" in body:
            self.add_gemini(body["usageMetadata"])

    def fields(self) -> dict[str, int | None]:
        """``{"prompt_tokens", "completion_tokens", "total_tokens"}`` for ``LLMOutput``."""
        total = self.total
        if total is None and self.prompt is not None and self.completion is not None:
            total = self.prompt + self.completion
        return {"prompt_tokens": self.prompt, "completion_tokens": self.completion, "total_tokens": total}


def body_usage(body: Any) -> dict[str, int | None]:
    """Token usage of a JSON response body (a list: Gemini's ``streamGenerateContent`` without SSE)."""
    totals = UsageTotals()
    for item in body if isinstance(body, list) else (body,):
        totals.add_body(item)
    return totals.fields()


def events_usage(events: Iterable[Mapping[str, Any]]) -> dict[str, int | None]:
    """Token usage of recorded stream events: the JSON ``data`` of SSE events, the JSON payload
    (``json``) of AWS event-stream messages."""
    totals = UsageTotals()
    for event in events:
        totals.add_body(event.get("data") if "data" in event else event.get("json"))
    return totals.fields()
