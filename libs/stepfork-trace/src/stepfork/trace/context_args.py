"""Context arguments: tool parameters that carry the framework's run context, not the tool's input.

A pydantic-ai ``@agent.tool`` receives a ``RunContext`` (model, deps such as an ``httpx.AsyncClient``,
usage...), a LangChain tool a ``RunnableConfig`` or a callback manager, a LangGraph tool its injected state,
store or runtime, an OpenAI Agents SDK ``@function_tool`` its ``RunContextWrapper`` (a ``ToolContext``), a
LlamaIndex tool its workflow ``Context``.
None of these is the call's input: they have no JSON form, change on every run, and a frozen result needs
nothing of them. They are left out of the recorded and matched input (issue 12):

- named ones: ``@trace_tool(exclude={"ctx"})``;
- known framework types, found without importing any framework: by the class of the value (its module's
  top package and the names on its MRO) and by the parameter's annotation (``Annotated`` metadata such as
  LangGraph's ``InjectedState``, or a ``RunnableConfig`` / ``ToolRuntime`` annotation), the rules below.

The recorded input then holds ``"$excluded": [names...]`` (sorted), so a reader of the bundle knows what the
tool also received; ``$`` cannot start a Python parameter name, so the key never collides with one. On
replay the same rule runs on the live call, so inputs match; a live tool body still gets the real objects.
"""

from __future__ import annotations

import re
from typing import Any

EXCLUDED_KEY = "$excluded"
"""The key of the recorded input listing the parameters left out."""

# (top-level package, class name on the value's MRO): values of these classes are context objects.
_CONTEXT_CLASSES = frozenset(
    {
        ("pydantic_ai", "RunContext"),
        ("langchain_core", "BaseCallbackManager"),  # CallbackManager, AsyncCallbackManager...
        ("langchain_core", "BaseRunManager"),  # CallbackManagerForToolRun, AsyncCallbackManagerForToolRun
        ("langgraph", "BaseStore"),  # an injected store
        ("langgraph", "ToolRuntime"),
        ("langgraph", "Runtime"),
        ("agents", "RunContextWrapper"),  # the OpenAI Agents SDK's tool context (ToolContext subclasses it)
        ("workflows", "Context"),  # a LlamaIndex workflow's Context (llama_index.core.workflow re-exports it)
        ("llama_index", "Context"),
    }
)
# Annotation classes (``Annotated`` metadata or the annotation itself) marking a context parameter.
_CONTEXT_MARKERS = frozenset(
    {
        ("langchain_core", "InjectedToolArg"),  # InjectedState, InjectedStore, InjectedToolCallId...
        ("langchain_core", "RunnableConfig"),
        ("langgraph", "InjectedState"),
        ("langgraph", "InjectedStore"),
        ("langgraph", "ToolRuntime"),
        ("langgraph", "Runtime"),
        ("langgraph", "BaseStore"),
        ("pydantic_ai", "RunContext"),
        ("agents", "RunContextWrapper"),
        ("agents", "ToolContext"),
        ("workflows", "Context"),
        ("llama_index", "Context"),
    }
)
# When annotations cannot be resolved (string annotations naming names not importable here).
_TEXT_MARKERS = re.compile(
    r"\b(RunContext|RunnableConfig|ToolRuntime|InjectedState|InjectedStore|InjectedToolCallId|"
    r"InjectedToolArg|CallbackManagerForToolRun|AsyncCallbackManagerForToolRun|RunContextWrapper|"
    r"ToolContext)\b"
)

PLAIN_TYPES = frozenset({str, int, float, bool, type(None), bytes, list, dict, tuple, set})
"""Classes whose values are never context objects (no framework context class is one of them)."""
_by_type: dict[type, bool] = {}


def _matches(cls: Any, rules: frozenset[tuple[str, str]]) -> bool:
    for klass in getattr(cls, "__mro__", (cls,)):
        module = getattr(klass, "__module__", None) or ""
        name = getattr(klass, "__name__", None)
        if name and (module.partition(".")[0], name) in rules:
            return True
    return False


def is_context_value(value: Any) -> bool:
    """True when ``value``'s class is a known framework context class (cached per class)."""
    cls = type(value)
    if cls in PLAIN_TYPES:
        return False
    known = _by_type.get(cls)
    if known is None:
        known = _by_type[cls] = _matches(cls, _CONTEXT_CLASSES)
    return known


def is_context_annotation(annotation: Any) -> bool:
    """True when a parameter annotation marks a context argument (see the module docstring).

    ``annotation`` is a resolved annotation (``typing.get_type_hints(..., include_extras=True)``) or the
    raw text of an unresolvable one.
    """
    if isinstance(annotation, str):
        return _TEXT_MARKERS.search(annotation) is not None
    metadata = getattr(annotation, "__metadata__", None)
    if metadata:  # Annotated[T, marker...]
        for marker in metadata:
            if _matches(marker if isinstance(marker, type) else type(marker), _CONTEXT_MARKERS):
                return True
        annotation = getattr(annotation, "__origin__", annotation)
    origin = getattr(annotation, "__origin__", None)  # RunContext[Deps] -> RunContext
    for candidate in (annotation, origin):
        if candidate is not None and isinstance(candidate, type) and _matches(candidate, _CONTEXT_MARKERS):
            return True
        name = getattr(candidate, "__name__", None)
        module = getattr(candidate, "__module__", None) or ""
        if name and (module.partition(".")[0], name) in _CONTEXT_MARKERS:  # TypedDicts: RunnableConfig
            return True
    return False


def annotated_context_parameters(func: Any) -> frozenset[str]:
    """The parameters of ``func`` whose annotation marks a context argument; empty when unknown."""
    import typing

    try:
        hints: dict[str, Any] = typing.get_type_hints(func, include_extras=True)
    except Exception:  # unresolvable forward references: read the raw annotations as text
        raw = getattr(func, "__annotations__", None) or {}
        hints = {name: value if isinstance(value, str) else repr(value) for name, value in raw.items()}
    return frozenset(name for name, hint in hints.items() if name != "return" and is_context_annotation(hint))
