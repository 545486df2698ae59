"""OpenAI integration: ``instrument_openai(client)`` (docs/integrations.md; issues 6 and 11).

Instruments an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` instance in place by installing Stepfork's
capture transport in its HTTP client (:mod:`stepfork.integrations._http_capture`): every request the
client sends (``chat.completions.create``/``.parse()``/``.stream()``, ``responses.create``/``.parse()``/
``.stream()``, ``with_raw_response``, ``with_streaming_response``...) is an LLM boundary with provider
``openai`` (or the host's, for proxies and Azure: see ``hosts=``), the request's model, and the input
``{"method", "path", "headers", "body"}``. Replay hands the recorded HTTP response back and the SDK builds
its own objects. Token usage lands in the ``llm_response`` token fields. Bundles recorded by 0.2.0's
SDK-level integration (``{"endpoint", "request"}`` inputs) still replay.
"""

from __future__ import annotations

from typing import Any

from stepfork.integrations._common import (
    Endpoint,
    require,
    sdk_constructor,
    sdk_sentinels,
    usage_fields,
)
from stepfork.integrations._http_capture import install

_openai = require("openai", "openai", "OpenAI")

from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402
from openai.types.responses import Response, ResponseStreamEvent  # noqa: E402

__all__ = ["CHAT_COMPLETIONS", "RESPONSES", "instrument_openai"]

_SDK = ("openai", str(_openai.__version__))
_CONSTRUCT = sdk_constructor(_openai)
_SENTINELS = sdk_sentinels(_openai)


def _chat_usage(wire: Any) -> dict[str, int | None]:
    return usage_fields(wire.get("usage"), "prompt_tokens", "completion_tokens", "total_tokens")


def _chat_stream_usage(chunks: list[Any]) -> dict[str, int | None]:
    for chunk in reversed(chunks):  # with stream_options={"include_usage": True}: the last chunk
        if isinstance(chunk, dict) and chunk.get("usage"):
            return _chat_usage(chunk)
    return usage_fields(None, "", "")


def _responses_usage(wire: Any) -> dict[str, int | None]:
    return usage_fields(wire.get("usage"), "input_tokens", "output_tokens", "total_tokens")


def _responses_stream_usage(chunks: list[Any]) -> dict[str, int | None]:
    for event in reversed(chunks):
        response = event.get("response") if isinstance(event, dict) else None
        if isinstance(response, dict) and response.get("usage"):
            return _responses_usage(response)
    return usage_fields(None, "", "")


CHAT_COMPLETIONS = Endpoint(
    provider="openai",
    endpoint="chat.completions.create",
    return_type=ChatCompletion,
    chunk_type=ChatCompletionChunk,
    usage=_chat_usage,
    stream_usage=_chat_stream_usage,
    sdk=_SDK,
    construct=_CONSTRUCT,
    sentinels=_SENTINELS,
)
"""0.2.0's SDK-level description of ``client.chat.completions.create`` (no longer patched): returns
``ChatCompletion``; streams ``ChatCompletionChunk``."""

RESPONSES = Endpoint(
    provider="openai",
    endpoint="responses.create",
    return_type=Response,
    chunk_type=ResponseStreamEvent,
    usage=_responses_usage,
    stream_usage=_responses_stream_usage,
    sdk=_SDK,
    construct=_CONSTRUCT,
    sentinels=_SENTINELS,
)
"""0.2.0's SDK-level description of ``client.responses.create`` (no longer patched): returns
``Response``; streams ``ResponseStreamEvent`` (a union)."""


def instrument_openai(client: Any, *, hosts: dict[str, str] | None = None) -> Any:
    """Instrument an OpenAI client instance in place and return it (idempotent).

    Args:
        client: an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (Azure clients too). Copies made later with
            ``client.with_options(...)`` share its HTTP client, so they are instrumented too.
        hosts: ``{host: provider}`` for gateways and proxies (default: the documented host table, then
            ``openai``).

    Returns:
        ``client``. Other instances stay untouched; with no active Stepfork session each request costs one
        ContextVar read more.

    Raises:
        TypeError: ``client`` is not an OpenAI client.
    """
    if not isinstance(client, (_openai.OpenAI, _openai.AsyncOpenAI)):
        raise TypeError(f"instrument_openai expects an OpenAI or AsyncOpenAI client, got {type(client)!r}")
    install(client._client, provider="openai", hosts=hosts, sdk=_SDK, sdk_error=_openai.OpenAIError)
    return client
