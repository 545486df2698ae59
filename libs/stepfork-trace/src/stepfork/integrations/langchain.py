"""LangChain / LangGraph integration: :class:`StepforkChatModel` (docs/integrations.md; issues 6 and 11).

``StepforkChatModel(inner=ChatOpenAI(...))`` (or ``instrument_chat_model(model)``) is a LangChain chat
model that delegates to ``inner``; every generation (``invoke``/``ainvoke``, ``generate``/``agenerate``,
``stream``/``astream``, through ``bind_tools`` and ``with_structured_output``, and so every LangGraph node
calling it) is an LLM boundary, recorded in one of two ways:

- A chat model that calls its provider through an ``openai`` or ``anthropic`` SDK client (``ChatOpenAI``,
  ``AzureChatOpenAI``, ``ChatAnthropic``...) is captured at that client's HTTP transport (issue 11): the
  wrapper installs the capture (``instrument_openai``/``instrument_anthropic``) and records nothing
  itself. The input is the HTTP request the SDK sent, so the tools from ``bind_tools``, the
  ``with_structured_output`` schema and every sampling parameter are in it; provider and model come from
  the request (``openai``, ``gpt-4o-mini``). Replay serves the recorded HTTP response and LangChain builds
  its own messages from it.
- Any other chat model (LangChain's fake chat models, in-process local models) is recorded at the wrapper:
  provider ``langchain`` unless given, the inner model's name, and the input ``{"endpoint": "chat_model",
  "request": {"model", "messages", "stop", ...}}`` where each message is its JSON without its ``id``
  (LangGraph gives messages fresh random ids on every run; they are not what the model sees). Replay
  returns real ``AIMessage``/``AIMessageChunk`` objects. Bundles recorded this way from an HTTP chat model
  (before issue 11) replay the same way: under a replay of such a recording the wrapper serves them.

Tools need no line: under a recording or a replay every LangChain tool is a Stepfork tool boundary
(:mod:`stepfork.integrations._framework_tools`); ``@tool`` over ``@trace_tool`` still works, recorded once.

The module imports without LangChain (issue 32): :class:`StepforkChatModel` is read from
:mod:`stepfork.integrations._langchain_model` on first use, and using either name without ``langchain_core``
raises ImportError with the install hint (``install "stepfork-trace[langchain]" ...``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepfork.integrations._common import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover
    from stepfork.integrations._langchain_model import StepforkChatModel

__all__ = ["StepforkChatModel", "instrument_chat_model"]

__getattr__ = lazy_attributes(
    __name__, "stepfork.integrations._langchain_model", frozenset({"StepforkChatModel"})
)


def instrument_chat_model(
    model: Any, *, provider: str = "langchain", name: str | None = None
) -> StepforkChatModel:
    """Wrap a LangChain chat model: ``StepforkChatModel(inner=model, provider=provider, model=name)``.

    Raises:
        ImportError: ``langchain_core`` is not installed (the install hint).
    """
    from stepfork.integrations._langchain_model import StepforkChatModel

    return StepforkChatModel(inner=model, provider=provider, model=name)
