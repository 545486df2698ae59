"""LangChain / LangGraph integration: :class:`StepforkChatModel` (docs/integrations.md; issue 6).

``StepforkChatModel(inner=ChatOpenAI(...))`` (or ``instrument_chat_model(model)``) is a LangChain chat
model whose every generation (``invoke``/``ainvoke``, ``generate``/``agenerate``, ``stream``/``astream``,
and so every LangGraph node calling it) is an LLM boundary: provider ``langchain`` unless given, the inner
model's name, and the input ``{"endpoint": "chat_model", "request": {"model", "messages", "stop",
...}}`` where each message is its JSON without its ``id`` (LangGraph gives messages fresh random ids on
every run; they are not what the model sees). Replay returns real ``AIMessage``/``AIMessageChunk``
objects. ``bind_tools`` binds the inner model and stays instrumented.

Tools: stack ``@tool`` over ``@trace_tool`` so a LangChain tool's body is a Stepfork tool boundary::

    @tool
    @trace_tool
    def get_weather(city: str) -> str: ...
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from stepfork.integrations._common import Endpoint, call_async, call_sync, require, usage_fields

_core = require("langchain_core", "langchain", "LangChain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult  # noqa: E402
from langchain_core.runnables import Runnable  # noqa: E402

__all__ = ["StepforkChatModel", "instrument_chat_model"]


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


class StepforkChatModel(BaseChatModel):
    """A chat model whose generations are Stepfork LLM boundaries; it delegates to ``inner``.

    Attributes:
        inner: the real chat model (or a ``bind_tools`` binding of it).
        provider: the provider recorded on the events (default ``"langchain"``).
        model: the model name recorded; default: the inner model's ``model_name``/``model``.
    """

    inner: Any
    provider: str = "langchain"
    model: str | None = None

    @property
    def _llm_type(self) -> str:
        return "stepfork"

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

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
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
        for chunk in call_sync(endpoint, request, send):
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

        request = {**self._request(messages, stop, kwargs), "stream": True}
        async for chunk in await call_async(endpoint, request, send):
            if run_manager is not None and isinstance(chunk.content, str):
                await run_manager.on_llm_new_token(chunk.content, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)


def instrument_chat_model(
    model: Any, *, provider: str = "langchain", name: str | None = None
) -> StepforkChatModel:
    """Wrap a LangChain chat model: ``StepforkChatModel(inner=model, provider=provider, model=name)``."""
    return StepforkChatModel(inner=model, provider=provider, model=name)
