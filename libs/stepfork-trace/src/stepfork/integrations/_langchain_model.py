"""The LangChain integration's implementation: :class:`StepforkChatModel`, which needs ``langchain_core``.

Imported on first use by :mod:`stepfork.integrations.langchain` (its public face, which says what it does),
so that module imports without LangChain (issue 32).
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from stepfork.integrations._common import Endpoint, call_async, call_sync, require, usage_fields
from stepfork.trace import boundary

_core = require("langchain_core", "langchain", "LangChain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult  # noqa: E402
from langchain_core.runnables import Runnable  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

__all__ = ["StepforkChatModel"]


def _usage(wire: Any) -> dict[str, int | None]:
    return usage_fields(wire.get("usage_metadata"), "input_tokens", "output_tokens", "total_tokens")


def _stream_usage(chunks: list[Any]) -> dict[str, int | None]:
    totals: dict[str, int | None] = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}
    for chunk in chunks:  # LangChain chunks carry usage deltas that add up
        if isinstance(chunk, dict):
            for key, value in _usage(chunk).items():
                if value is not None:
                    totals[key] = (totals[key] or 0) + value
    return totals


def _endpoint(provider: str) -> Endpoint:
    return Endpoint(
        provider=provider,
        endpoint="chat_model",
        return_type=AIMessage,
        chunk_type=AIMessageChunk,
        usage=_usage,
        stream_usage=_stream_usage,
        sdk=("langchain-core", str(getattr(_core, "__version__", "unknown"))),
    )


def _message_json(message: BaseMessage) -> dict[str, Any]:
    data: dict[str, Any] = message.model_dump(mode="json", exclude={"id"}, exclude_none=True)
    return data


def _model_name(inner: Any) -> str:
    bound = getattr(inner, "bound", inner)  # a RunnableBinding from bind_tools
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(bound, attribute, None)
        if isinstance(value, str) and value:
            return value
    llm_type = getattr(bound, "_llm_type", None)
    return llm_type if isinstance(llm_type, str) and llm_type else type(bound).__name__


_SDK_CLIENT_ATTRIBUTES = ("root_client", "root_async_client", "_client", "_async_client")
"""Where LangChain's provider packages keep their SDK clients (``ChatOpenAI.root_client``,
``ChatAnthropic._client``: a cached property that makes the client on first access)."""


def _sdk_clients(model: Any) -> list[Any]:
    """The ``openai``/``anthropic`` SDK clients of a chat model (or of the model a binding wraps)."""
    seen: set[int] = set()
    while hasattr(model, "bound") and id(model) not in seen:  # RunnableBinding from bind_tools/bind
        seen.add(id(model))
        model = model.bound
    clients = []
    for name in _SDK_CLIENT_ATTRIBUTES:
        try:
            client = getattr(model, name, None)
        except Exception:  # noqa: S112 - a lazily made client that cannot be made: not an HTTP model
            continue
        if client is not None and type(client).__module__.split(".", 1)[0] in ("openai", "anthropic"):
            clients.append(client)
    return clients


def _instrument_http_clients(model: Any) -> bool:
    """Install the HTTP capture in every SDK client of ``model``; True if it has one."""
    instrumented = False
    for client in _sdk_clients(model):
        root = type(client).__module__.split(".", 1)[0]
        if root == "openai" and "openai" in sys.modules:
            from stepfork.integrations.openai import instrument_openai

            with contextlib.suppress(TypeError):  # not an OpenAI client (a resource, a mock)
                instrument_openai(client)
                instrumented = True
        elif root == "anthropic" and "anthropic" in sys.modules:
            from stepfork.integrations.anthropic import instrument_anthropic

            with contextlib.suppress(TypeError):
                instrument_anthropic(client)
                instrumented = True
    return instrumented


_wrapper_replays: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _replays_wrapper_recording() -> bool:
    """True under a replay of a recording made at this wrapper from an HTTP chat model (before issue 11):
    it has ``chat_model`` inputs and no HTTP-captured ones."""
    handler, _ = boundary.resolve_handler()
    if handler is None or not getattr(handler, "is_replay", False):
        return False
    with contextlib.suppress(KeyError, TypeError):
        return _wrapper_replays[handler]
    inputs = [c.input for c in getattr(handler, "calls", ()) or () if c.kind == "llm"]
    wrapper = any(isinstance(i, dict) and i.get("endpoint") == "chat_model" for i in inputs)
    http = any(isinstance(i, dict) and "method" in i and "path" in i for i in inputs)
    with contextlib.suppress(TypeError):
        _wrapper_replays[handler] = wrapper and not http
    return wrapper and not http


class StepforkChatModel(BaseChatModel):
    """A chat model whose generations are Stepfork LLM boundaries; it delegates to ``inner``.

    Attributes:
        inner: the real chat model (or a ``bind_tools`` binding of it). When it holds an ``openai`` or
            ``anthropic`` SDK client, the capture is installed in it here (module docstring).
        provider: the provider recorded on wrapper-level events (default ``"langchain"``); HTTP-captured
            calls take the request's (``openai``, ``anthropic``).
        model: the model name recorded at the wrapper; default: the inner model's ``model_name``/``model``.
    """

    inner: Any
    provider: str = "langchain"
    model: str | None = None
    _http: bool = PrivateAttr(default=False)

    def model_post_init(self, context: Any, /) -> None:
        """Install the HTTP capture in the inner model's SDK clients, when it has any."""
        super().model_post_init(context)
        self._http = _instrument_http_clients(self.inner)

    @property
    def _llm_type(self) -> str:
        return "stepfork"

    def _captured(self) -> bool:
        """True when this call goes to the HTTP capture (not recorded at the wrapper)."""
        return self._http and not _replays_wrapper_recording()

    def _request(
        self, messages: Sequence[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model or _model_name(self.inner),
            "messages": [_message_json(m) for m in messages],
        }
        if stop is not None:
            request["stop"] = stop
        request.update(kwargs)
        return request

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        """Bind tools on the inner model; the result is still instrumented."""
        bound = self.inner.bind_tools(tools, **kwargs)
        return StepforkChatModel(
            inner=bound, provider=self.provider, model=self.model or _model_name(self.inner)
        )

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
        """The inner model's own structured output when it is captured over HTTP (``ChatOpenAI`` uses
        ``response_format``; the schema is in the recorded request); else LangChain's default
        (``bind_tools`` and a parser), recorded at the wrapper."""
        if self._http:
            result: Runnable[Any, Any] = self.inner.with_structured_output(schema, **kwargs)
            return result
        return super().with_structured_output(schema, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self._captured():
            message = self.inner.invoke(messages, stop=stop, **kwargs)
            return ChatResult(generations=[ChatGeneration(message=message)])
        endpoint = _endpoint(self.provider)

        def send(**_: Any) -> Any:
            return self.inner.invoke(messages, stop=stop, **kwargs)

        message = call_sync(endpoint, self._request(messages, stop, kwargs), send)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self._captured():
            message = await self.inner.ainvoke(messages, stop=stop, **kwargs)
            return ChatResult(generations=[ChatGeneration(message=message)])
        endpoint = _endpoint(self.provider)

        async def send(**_: Any) -> Any:
            return await self.inner.ainvoke(messages, stop=stop, **kwargs)

        message = await call_async(endpoint, self._request(messages, stop, kwargs), send)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        endpoint = _endpoint(self.provider)

        def send(**_: Any) -> Any:
            return self.inner.stream(messages, stop=stop, **kwargs)

        request = {**self._request(messages, stop, kwargs), "stream": True}
        chunks = send() if self._captured() else call_sync(endpoint, request, send)
        for chunk in chunks:
            if run_manager is not None and isinstance(chunk.content, str):
                run_manager.on_llm_new_token(chunk.content, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        endpoint = _endpoint(self.provider)

        async def send(**_: Any) -> Any:
            return self.inner.astream(messages, stop=stop, **kwargs)

        if self._captured():
            chunks = self.inner.astream(messages, stop=stop, **kwargs)
        else:
            request = {**self._request(messages, stop, kwargs), "stream": True}
            chunks = await call_async(endpoint, request, send)
        async for chunk in chunks:
            if run_manager is not None and isinstance(chunk.content, str):
                await run_manager.on_llm_new_token(chunk.content, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)
