"""Anthropic integration: ``instrument_anthropic(client)`` (docs/integrations.md; issue 6).

Instruments an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` instance in place:
``messages.create`` (with and without ``stream=True``) becomes an LLM boundary with provider
``anthropic``, the request's model and the input ``{"endpoint": "messages.create", "request": ...}``.
Replay returns real ``Message`` objects and streams of ``RawMessageStreamEvent``; token usage
(``input_tokens``/``output_tokens``) lands in the ``llm_response`` token fields. Not instrumented:
``messages.stream()`` helpers, ``messages.parse()``, ``count_tokens``, batches and ``with_raw_response``.
"""

from __future__ import annotations

from typing import Any

from stepfork.integrations._common import (
    Endpoint,
    async_wrapper,
    patch_method,
    require,
    sdk_constructor,
    sdk_sentinels,
    sync_wrapper,
    usage_fields,
)

_anthropic = require("anthropic", "anthropic", "Anthropic")

from anthropic.types import Message, RawMessageStreamEvent  # noqa: E402

__all__ = ["MESSAGES", "instrument_anthropic"]


def _usage(wire: Any) -> dict[str, int | None]:
    return usage_fields(wire.get("usage"), "input_tokens", "output_tokens")


def _stream_usage(events: list[Any]) -> dict[str, int | None]:
    prompt: int | None = None
    completion: int | None = None
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("type") == "message_start":
            usage = _usage(event.get("message") or {})
            prompt, completion = usage["prompt_tokens"], usage["completion_tokens"]
        elif event.get("type") == "message_delta":
            delta = usage_fields(event.get("usage"), "input_tokens", "output_tokens")
            prompt = delta["prompt_tokens"] if delta["prompt_tokens"] is not None else prompt
            completion = delta["completion_tokens"] if delta["completion_tokens"] is not None else completion
    total = prompt + completion if prompt is not None and completion is not None else None
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


MESSAGES = Endpoint(
    provider="anthropic",
    endpoint="messages.create",
    return_type=Message,
    chunk_type=RawMessageStreamEvent,
    usage=_usage,
    stream_usage=_stream_usage,
    sdk=("anthropic", str(_anthropic.__version__)),
    construct=sdk_constructor(_anthropic),
    sentinels=sdk_sentinels(_anthropic),
)
"""``client.messages.create``: returns ``Message``; streams ``RawMessageStreamEvent`` (a union)."""


def instrument_anthropic(client: Any) -> Any:
    """Instrument an Anthropic client instance in place and return it (idempotent).

    Args:
        client: an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic``.

    Returns:
        ``client``; other instances stay untouched.

    Raises:
        TypeError: ``client`` is not an Anthropic client.
    """
    if not isinstance(client, (_anthropic.Anthropic, _anthropic.AsyncAnthropic)):
        raise TypeError(f"instrument_anthropic expects an Anthropic client, got {type(client)!r}")
    wrap = async_wrapper if isinstance(client, _anthropic.AsyncAnthropic) else sync_wrapper
    patch_method(client.messages, "create", wrap(MESSAGES))
    return client
