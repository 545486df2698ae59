"""OpenAI integration: ``instrument_openai(client)`` (docs/integrations.md; issue 6).

Instruments an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` instance in place: ``chat.completions.create``
and ``responses.create`` (with and without ``stream=True``) become LLM boundaries with provider ``openai``,
the request's model, and the input ``{"endpoint": ..., "request": <parameters>}`` (``extra_headers`` and
``timeout`` are transport options, left out). Replay returns real ``ChatCompletion``/``Response`` objects
and streams of ``ChatCompletionChunk``/``ResponseStreamEvent``. Token usage lands in the ``llm_response``
token fields. Not instrumented: ``.parse()``, ``.stream()`` helpers, ``with_raw_response`` and the other
endpoints (calls there are invisible to Stepfork).
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
"""``client.chat.completions.create``: returns ``ChatCompletion``; streams ``ChatCompletionChunk``."""

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
"""``client.responses.create``: returns ``Response``; streams ``ResponseStreamEvent`` (a union)."""


def instrument_openai(client: Any) -> Any:
    """Instrument an OpenAI client instance in place and return it (idempotent).

    Args:
        client: an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (Azure clients too: same resources).

    Returns:
        ``client``. Other instances stay untouched; with no active Stepfork session each call costs one
        ContextVar read more.

    Raises:
        TypeError: ``client`` is not an OpenAI client.
    """
    if not isinstance(client, (_openai.OpenAI, _openai.AsyncOpenAI)):
        raise TypeError(f"instrument_openai expects an OpenAI or AsyncOpenAI client, got {type(client)!r}")
    wrap = async_wrapper if isinstance(client, _openai.AsyncOpenAI) else sync_wrapper
    patch_method(client.chat.completions, "create", wrap(CHAT_COMPLETIONS))
    patch_method(client.responses, "create", wrap(RESPONSES))
    return client
