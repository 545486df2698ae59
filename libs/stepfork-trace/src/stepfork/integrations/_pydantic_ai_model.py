"""The pydantic-ai integration's implementation: :class:`StepforkModel`, which needs ``pydantic_ai``.

Imported on first use by :mod:`stepfork.integrations.pydantic_ai` (its public face, which says what it
does), so that module imports without pydantic-ai (issue 32).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any

from stepfork.integrations._common import Endpoint, call_async, require, usage_fields
from stepfork.trace import boundary

_pai = require("pydantic_ai", "pydantic-ai", "pydantic-ai")

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse  # noqa: E402
from pydantic_ai.models import Model, ModelRequestParameters  # noqa: E402
from pydantic_ai.models.wrapper import WrapperModel  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402

__all__ = ["VOLATILE_KEYS", "StepforkModel"]

VOLATILE_KEYS = frozenset({"timestamp", "run_id", "conversation_id"})
"""Message fields left out of the recorded input: they differ on every run, and the model never sees them."""


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def _dump_response(response: Any) -> Any:
    return ModelMessagesTypeAdapter.dump_python([response], mode="json")[0]


def _load_response(*, value: Any, type_: Any) -> Any:
    return ModelMessagesTypeAdapter.validate_python([value])[0]


def _usage(wire: Any) -> dict[str, int | None]:
    return usage_fields(wire.get("usage"), "input_tokens", "output_tokens")


def _endpoint(provider: str) -> Endpoint:
    return Endpoint(
        provider=provider,
        endpoint="request",
        return_type=ModelResponse,
        chunk_type=None,
        usage=_usage,
        stream_usage=lambda chunks: usage_fields(None, "", ""),
        sdk=("pydantic-ai-slim", str(getattr(_pai, "__version__", "unknown"))),
        construct=_load_response,
        dump=_dump_response,
    )


def _plain(value: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Any).dump_python(value, mode="json")


class StepforkModel(WrapperModel):
    """A pydantic-ai model whose requests are Stepfork LLM boundaries; it delegates to the wrapped model.

    Args:
        wrapped: the real model (an instance or a known model name).
        provider: the provider recorded (default: the wrapped model's ``system``).
    """

    def __init__(self, wrapped: Model | str, *, provider: str | None = None) -> None:
        super().__init__(wrapped)
        self._stepfork_provider = provider
        # A model calling its provider over HTTP (OpenAIChatModel, AnthropicModel...) is captured at its
        # client's transport (issue 11): the request holds everything the model sees (output tools, tool
        # schemas), streams work, and the model builds its own responses on replay.
        self._stepfork_http = _instrument_http_client(self.wrapped)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Send (record) or serve (replay) one model request; returns the ``ModelResponse``."""
        if self._stepfork_http:
            return await self.wrapped.request(messages, model_settings, model_request_parameters)
        provider = self._stepfork_provider or str(self.wrapped.system or "pydantic-ai")
        request = {
            "model": self.wrapped.model_name,
            "messages": _without_volatile(ModelMessagesTypeAdapter.dump_python(messages, mode="json")),
            "settings": _plain(model_settings),
            "tools": _plain([asdict(t) for t in model_request_parameters.function_tools]),
        }

        async def send(**_: Any) -> Any:
            return await self.wrapped.request(messages, model_settings, model_request_parameters)

        response: ModelResponse = await call_async(_endpoint(provider), request, send)
        return response

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """Streamed requests: captured at the HTTP transport for HTTP models; without a session
        delegated untouched; otherwise (a model with no HTTP client) NotImplementedError."""
        handler, _ = boundary.resolve_handler()
        if handler is not None and not self._stepfork_http:
            raise NotImplementedError(
                "stepfork does not instrument streamed pydantic-ai requests yet (agent.run_stream); use "
                "agent.run so the request is recorded and replayed"
            )
        async with self.wrapped.request_stream(*args, **kwargs) as stream:
            yield stream


def _instrument_http_client(model: Any) -> bool:
    """Install the capture in the HTTP client of ``model``'s SDK client, if it has one; True if so."""
    from stepfork.integrations._http_capture import install, library_of

    client = getattr(model, "client", None)
    http = getattr(client, "_client", None)
    if http is None or library_of(http) is None:
        return False
    root = type(client).__module__.split(".", 1)[0]
    if root == "openai":
        from stepfork.integrations.openai import instrument_openai

        instrument_openai(client)
    elif root == "anthropic":
        from stepfork.integrations.anthropic import instrument_anthropic

        instrument_anthropic(client)
    else:
        install(http)
    return True
