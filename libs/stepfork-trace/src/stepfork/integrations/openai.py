"""OpenAI integration: ``instrument_openai(client)`` (docs/integrations.md; issues 6 and 11).

Instruments an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` instance in place by installing Stepfork's
capture transport in its HTTP client (:mod:`stepfork.integrations._http_capture`): every request the
client sends (``chat.completions.create``/``.parse()``/``.stream()``, ``responses.create``/``.parse()``/
``.stream()``, ``with_raw_response``, ``with_streaming_response``...) is an LLM boundary with provider
``openai`` (or the host's, for proxies and Azure: see ``hosts=``), the request's model, and the input
``{"method", "path", "headers", "body"}``. Replay hands the recorded HTTP response back and the SDK builds
its own objects. Token usage lands in the ``llm_response`` token fields. Bundles recorded by 0.2.0's
SDK-level integration (``{"endpoint", "request"}`` inputs) still replay.

The module imports without the openai SDK (issue 32): the SDK is imported on first use, and
``instrument_openai`` then raises ImportError with the install hint.
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

__all__ = [
    "CHAT_COMPLETIONS",
    "CHAT_COMPLETIONS_METHOD",
    "RESPONSES",
    "OpenAIIntegrationError",
    "achat_completions_create",
    "chat_completions_create",
    "instrument_openai",
]

if TYPE_CHECKING:  # pragma: no cover - built on first use by __getattr__ below
    CHAT_COMPLETIONS: Endpoint
    RESPONSES: Endpoint


def _sdk() -> Any:
    """The ``openai`` package, imported on first use: the module imports without it (issue 32).

    Raises:
        ImportError: ``install "stepfork-trace[openai]" to use the OpenAI integration``.
    """
    return require("openai", "openai", "OpenAI")


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


@functools.cache
def _endpoints() -> dict[str, Endpoint]:
    """``CHAT_COMPLETIONS`` and ``RESPONSES``: 0.2.0's SDK-level descriptions of
    ``client.chat.completions.create`` (returns ``ChatCompletion``, streams ``ChatCompletionChunk``) and
    ``client.responses.create`` (returns ``Response``, streams ``ResponseStreamEvent``, a union); no longer
    patched. Built on first use, since they name the SDK's types (module ``__getattr__``)."""
    openai = _sdk()
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    methods = {  # name -> (endpoint, response type, chunk type, usage, stream usage)
        "CHAT_COMPLETIONS": ("chat.completions.create", ChatCompletion, ChatCompletionChunk, _chat_usage),
        "RESPONSES": ("responses.create", Response, ResponseStreamEvent, _responses_usage),
    }
    streamed = {"CHAT_COMPLETIONS": _chat_stream_usage, "RESPONSES": _responses_stream_usage}
    sdk, construct, sentinels = sdk_version(openai), sdk_constructor(openai), sdk_sentinels(openai)
    return {
        name: Endpoint("openai", endpoint, returned, chunk, usage, streamed[name], sdk, construct, sentinels)
        for name, (endpoint, returned, chunk, usage) in methods.items()
    }


def __getattr__(name: str) -> Any:
    """``CHAT_COMPLETIONS`` and ``RESPONSES`` (PEP 562; see :func:`_endpoints`).

    Raises:
        ImportError: the openai SDK is not installed (the install hint).
        AttributeError: any other name.
    """
    if name in ("CHAT_COMPLETIONS", "RESPONSES"):
        return _endpoints()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        ImportError: the openai SDK is not installed (``install "stepfork-trace[openai]" ...``).
    """
    openai = _sdk()
    if not isinstance(client, (openai.OpenAI, openai.AsyncOpenAI)):
        raise TypeError(f"instrument_openai expects an OpenAI or AsyncOpenAI client, got {type(client)!r}")
    sdk, sdk_error = sdk_version(openai), openai.OpenAIError
    install(client._client, provider="openai", hosts=hosts, sdk=sdk, sdk_error=sdk_error)
    return client


# -- the reference's function-call API (REFERENCE-API.md ``stepfork.integrations.openai``; issue 14) ------
# Thin additions for programs written against the earlier implementation: one llm_request boundary around
# ``client.chat.completions.create`` returning the response as a JSON dict. Use them on a client that is
# not instrumented (an instrumented one would record its own nested call too).

CHAT_COMPLETIONS_METHOD = "chat.completions.create"
"""The ``method`` recorded in the input of :func:`chat_completions_create` calls."""


class OpenAIIntegrationError(ValueError):
    """A reference-style call that cannot be made or whose response cannot be kept: no ``model``,
    ``stream=True``, request parameters that are not JSON, a client without ``chat.completions.create``,
    or a response that is not a JSON object (REFERENCE-API.md ``stepfork.integrations.openai``)."""


def _is_json(value: Any) -> bool:
    from stepfork.trace.canonical import canonical_json

    try:
        canonical_json(value)
    except (TypeError, ValueError):
        return False
    return True


def _reference_call(client: Any, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise OpenAIIntegrationError("chat_completions_create requires a non-empty model")
    if request.get("stream"):
        raise OpenAIIntegrationError(
            "chat_completions_create does not support streaming (stream=True); use instrument_openai(client) "
            "for streams"
        )
    if not _is_json(request):
        raise OpenAIIntegrationError("chat_completions_create request parameters must be JSON-compatible")
    completions = getattr(getattr(client, "chat", None), "completions", None)
    if not callable(getattr(completions, "create", None)):
        raise OpenAIIntegrationError(f"{type(client).__name__} has no chat.completions.create")
    return model, {"method": CHAT_COMPLETIONS_METHOD, "request": request}


def _as_json_dict(response: Any) -> Any:
    """The response's JSON (``model_dump(mode="json")``, else ``to_dict()``) with its token usage.

    Raises:
        OpenAIIntegrationError: the response is not a JSON object.
    """
    from stepfork.trace.instrument import LLMOutput

    if hasattr(response, "model_dump"):
        wire = response.model_dump(mode="json")
    elif hasattr(response, "to_dict"):
        wire = response.to_dict()
    else:
        wire = response
    if not isinstance(wire, dict):
        kind = type(wire).__name__
        raise OpenAIIntegrationError(f"chat.completions.create response is not a JSON object: {kind}")
    if not _is_json(wire):
        raise OpenAIIntegrationError("chat.completions.create response is not JSON-compatible")
    return LLMOutput(wire, **_chat_usage(wire))


def chat_completions_create(client: Any, /, *, replay_policy: str = "frozen", **request: Any) -> Any:
    """Call ``client.chat.completions.create(**request)`` as an LLM boundary; return the response as a dict.

    Records provider ``openai``, the request's model and the input ``{"method": "chat.completions.create",
    "request": request}``, with token usage; under replay the recorded dict is returned (REFERENCE-API.md).

    Raises:
        OpenAIIntegrationError: ``model`` is missing, ``stream=True``, a parameter is not JSON or the client
            has no ``chat.completions.create`` (before anything is sent or recorded); the response is not a
            JSON object (recorded as the call's failure, then raised).
        Whatever the SDK raises (recorded, then re-raised).
    """
    from stepfork.trace.instrument import llm_request

    model, payload = _reference_call(client, request)
    return llm_request(
        model=model,
        input=payload,
        provider="openai",
        replay_policy=replay_policy,
        call=lambda: _as_json_dict(client.chat.completions.create(**request)),
    )


async def achat_completions_create(client: Any, /, *, replay_policy: str = "frozen", **request: Any) -> Any:
    """Async :func:`chat_completions_create` for an ``AsyncOpenAI`` client (same arguments and errors)."""
    from stepfork.trace.instrument import allm_request

    model, payload = _reference_call(client, request)

    async def call() -> Any:
        return _as_json_dict(await client.chat.completions.create(**request))

    return await allm_request(
        model=model, input=payload, provider="openai", replay_policy=replay_policy, call=call
    )
