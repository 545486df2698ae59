"""Anthropic integration: ``instrument_anthropic(client)`` (docs/integrations.md; issues 6 and 11).

Instruments an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` instance in place by installing
Stepfork's capture transport in its HTTP client (:mod:`stepfork.integrations._http_capture`): every request
(``messages.create`` plain and streamed, ``messages.stream()``, ``messages.parse()``, ``count_tokens``,
``with_raw_response``...) is an LLM boundary with provider ``anthropic``, the request's model and the input
``{"method", "path", "headers", "body"}`` (``anthropic-version``/``anthropic-beta`` kept, ``x-api-key``
never). Replay hands the recorded HTTP response back and the SDK builds its own ``Message`` and stream
events; token usage (``input_tokens``/``output_tokens``) lands in the ``llm_response`` token fields.
Bundles recorded by 0.2.0's SDK-level integration still replay. The module imports without the anthropic SDK
(issue 32): ``instrument_anthropic`` then raises ImportError with the install hint.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from stepfork.integrations._common import (
    Endpoint,
    require,
    sdk_constructor,
    sdk_sentinels,
    sdk_version,
    usage_fields,
)
from stepfork.integrations._http_capture import install

__all__ = ["MESSAGES", "instrument_anthropic"]

if TYPE_CHECKING:  # pragma: no cover - built on first use by __getattr__ below
    MESSAGES: Endpoint


def _sdk() -> Any:
    """The ``anthropic`` package, imported on first use: the module imports without it (issue 32).

    Raises:
        ImportError: ``install "stepfork-trace[anthropic]" to use the Anthropic integration``.
    """
    return require("anthropic", "anthropic", "Anthropic")


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


@functools.cache
def _messages() -> Endpoint:
    """``MESSAGES``: 0.2.0's SDK-level description of ``client.messages.create`` (no longer patched):
    returns ``Message``; streams ``RawMessageStreamEvent`` (a union). Built on first use, since it names
    the SDK's types (module ``__getattr__``)."""
    anthropic = _sdk()
    from anthropic.types import Message, RawMessageStreamEvent

    return Endpoint(
        provider="anthropic",
        endpoint="messages.create",
        return_type=Message,
        chunk_type=RawMessageStreamEvent,
        usage=_usage,
        stream_usage=_stream_usage,
        sdk=sdk_version(anthropic),
        construct=sdk_constructor(anthropic),
        sentinels=sdk_sentinels(anthropic),
    )


def __getattr__(name: str) -> Any:
    """``MESSAGES`` (PEP 562; see :func:`_messages`).

    Raises:
        ImportError: the anthropic SDK is not installed (the install hint).
        AttributeError: any other name.
    """
    if name == "MESSAGES":
        return _messages()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def instrument_anthropic(client: Any, *, hosts: dict[str, str] | None = None) -> Any:
    """Instrument an Anthropic client instance in place and return it (idempotent).

    Args:
        client: an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic``.
        hosts: ``{host: provider}`` for gateways and proxies (default: the host table, then ``anthropic``).

    Returns:
        ``client``; other instances stay untouched.

    Raises:
        TypeError: ``client`` is not an Anthropic client.
        ImportError: the anthropic SDK is not installed (``install "stepfork-trace[anthropic]" ...``).
    """
    anthropic = _sdk()
    if not isinstance(client, (anthropic.Anthropic, anthropic.AsyncAnthropic)):
        raise TypeError(f"instrument_anthropic expects an Anthropic client, got {type(client)!r}")
    sdk, sdk_error = sdk_version(anthropic), anthropic.AnthropicError
    install(client._client, provider="anthropic", hosts=hosts, sdk=sdk, sdk_error=sdk_error)
    return client
