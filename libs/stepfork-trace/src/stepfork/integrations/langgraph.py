"""``stepfork.integrations.langgraph``: the reference's LangGraph names (REFERENCE-API.md; issue 14).

Thin adapters over Stepfork's LangChain integration (:mod:`stepfork.integrations.langchain`), for programs
written against the earlier implementation:

- ``traced_chat_model(model)`` instruments a LangChain chat model *in place* and returns the same instance
  (its generations become LLM boundaries through a :class:`StepforkChatModel` around an uninstrumented copy;
  a ``ChatOpenAI``/``ChatAnthropic`` is captured at its SDK client's HTTP transport, as that wrapper
  does); calling it twice is harmless.
- ``traced_tool(func)`` returns a LangChain ``BaseTool`` whose body is a ``trace_tool`` boundary.

Needs ``langchain_core`` (``pip install stepfork-trace[langchain]``) when used; the module imports without it
(issue 32).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from stepfork.integrations._common import require
from stepfork.trace.instrument import trace_tool

__all__ = ["LangGraphIntegrationError", "traced_chat_model", "traced_tool"]

_MARK = "__stepfork_traced__"
_METHODS = ("_generate", "_agenerate", "_stream", "_astream")


class LangGraphIntegrationError(ValueError):
    """A model or tool that the LangGraph adapters cannot instrument (the reason is in the message)."""


def traced_chat_model(model: Any, *, provider: str | None = None, replay_policy: str = "frozen") -> Any:
    """Instrument the LangChain chat model ``model`` in place and return it (the same instance).

    Its ``invoke``/``ainvoke``/``stream``/``astream`` (and so every LangGraph node calling it) record and
    replay as LLM boundaries, as :class:`StepforkChatModel` does; ``provider`` defaults to the model's
    ``_llm_type`` (the earlier implementation's rule), else ``langchain``. A chat model that calls its
    provider through an SDK client (``ChatOpenAI``...) is recorded at that client's HTTP transport, with the
    request's provider.
    ``replay_policy`` other than ``frozen`` is refused (the LangChain integration records frozen calls).

    Raises:
        LangGraphIntegrationError: ``model`` is not a LangChain chat model, or an unsupported policy.
        ImportError: ``langchain_core`` is not installed (the install hint).
    """
    require("langchain_core", "langchain", "LangChain")
    from langchain_core.language_models import BaseChatModel

    from stepfork.integrations._langchain_model import StepforkChatModel

    if getattr(model, _MARK, False):
        return model
    if not isinstance(model, BaseChatModel):
        raise LangGraphIntegrationError(
            f"traced_chat_model expects a LangChain chat model (a BaseChatModel), got {type(model).__name__}"
        )
    if str(getattr(replay_policy, "value", replay_policy)) != "frozen":
        raise LangGraphIntegrationError(
            "traced_chat_model records frozen calls only (replay_policy='frozen')"
        )
    # the provider recorded: the argument, else the model's _llm_type, as the earlier implementation did
    llm_type = getattr(model, "_llm_type", None)
    recorded = provider or (llm_type if isinstance(llm_type, str) and llm_type else "langchain")
    wrapper = StepforkChatModel(inner=model.model_copy(), provider=recorded)
    for name in _METHODS:  # instance attributes shadow the class's methods; the copy keeps the originals
        object.__setattr__(model, name, getattr(wrapper, name))
    object.__setattr__(model, _MARK, True)
    return model


def traced_tool(
    target: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    replay_policy: str = "frozen",
    serializer: Callable[[Any], Any] | None = None,
) -> Any:
    """Return a LangChain ``BaseTool`` whose body is a Stepfork tool boundary (``trace_tool``).

    Use bare (``@traced_tool``) or with keywords. ``name`` defaults to the function's name, ``description``
    to its docstring.

    Raises:
        LangGraphIntegrationError: ``target`` is already a ``BaseTool`` or is not callable, or it has no
            description (LangChain requires one).
        ImportError: ``langchain_core`` is not installed (the install hint).
    """
    require("langchain_core", "langchain", "LangChain")
    from langchain_core.tools import BaseTool, StructuredTool

    def build(func: Callable[..., Any]) -> BaseTool:
        if isinstance(func, BaseTool):
            raise LangGraphIntegrationError(
                "traced_tool expects a plain function, not a BaseTool: pass the tool's underlying function"
            )
        if not callable(func):
            kind = type(func).__name__
            raise LangGraphIntegrationError(f"traced_tool expects a callable function, got {kind}")
        tool_name = name or getattr(func, "__name__", None) or "tool"
        text = description or inspect.getdoc(func)
        if not text:
            raise LangGraphIntegrationError(f"traced_tool {tool_name!r} needs a docstring or description=")
        traced = trace_tool(name=tool_name, replay_policy=replay_policy, serializer=serializer)(func)
        if inspect.iscoroutinefunction(func):
            return StructuredTool.from_function(coroutine=traced, name=tool_name, description=text)
        return StructuredTool.from_function(func=traced, name=tool_name, description=text)

    if target is not None:
        return build(target)
    return build
