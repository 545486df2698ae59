"""Agent frameworks' tools as instrumented boundaries, with no line in the agent (issue 30;
docs/integrations.md, "Agent frameworks").

A framework tool is the framework's object around the user's Python function; the framework calls that
function when the model asks for the tool. Each framework below gets one patch, at the seam where the
framework calls the function, that makes the call a Stepfork tool call: recorded (name, input, result, or
failure) and, in a replay that serves tools, answered from the recording without running the function, the
framework receiving the recorded result where it received the function's (and building its own result
types from it: a ``ToolMessage``, a ``ToolOutput``, the Agents SDK's tool output item...). The seams:

- OpenAI Agents SDK: ``FunctionTool.on_invoke_tool`` of a ``@function_tool`` (its invoker's ``__call__``);
  input: the JSON arguments the model wrote, parsed.
- LangChain / LangGraph: ``BaseTool.run``/``arun`` (``invoke``/``ainvoke``, as ``ToolNode`` calls them)
  reach the tool's ``func``/``coroutine``, or its class's ``_run``/``_arun``.
- smolagents: ``Tool.__call__`` (agents and the code interpreter) reaches the tool's ``forward``.
- LlamaIndex: ``FunctionTool.call``/``acall`` reach its ``fn``/``async_fn``.
- CrewAI: ``BaseTool.run``/``arun``, ``Tool.run``/``arun`` and ``CrewStructuredTool.invoke``/``ainvoke``
  (how an agent calls a tool) reach the tool's ``func`` (or a ``BaseTool`` subclass's ``_run``/``_arun``).
- pydantic-ai: ``FunctionToolset.call_tool`` (every ``@agent.tool``, ``@agent.tool_plain``, ``Tool(...)`` and
  ``FunctionToolset`` tool, before a sync one goes to a worker thread); input: the arguments as pydantic-ai
  validated them (defaults applied), a ``RunContext`` parameter listed under ``"$excluded"``.

Except for the Agents SDK, the input is the function's arguments as ``@trace_tool`` binds them (for
pydantic-ai, the same dict, built from the validated arguments).
The call's name is the tool's name as the model sees it (``get_weather``), as ``@trace_tool`` names it: a
framework tool lives in the agent's process, not behind a server (MCP's ``SERVER/TOOL``). "As ``@trace_tool``
binds them": the arguments bound to the function's signature with defaults applied, context arguments (a
``RunContextWrapper``, LangGraph's injected state, a callback manager...) left out and listed under
``"$excluded"``, a resumed LangGraph task's answers under ``"$resume"`` (:func:`stepfork.trace.instrument.
tool_boundary`).

Not recorded here: a function already under ``@trace_tool`` (recorded by it, once:
:func:`stepfork.trace.instrument.is_instrumented`), and the framework's own tools, whose work other
boundaries record (an Agents SDK agent-as-tool or MCP tool, smolagents' ``final_answer``, LangChain's
retriever tool, CrewAI's delegation tools, the tools pydantic-ai defines itself but its common tools, tools of
the MCP adapters: their model calls, HTTP requests and MCP calls are recorded where they happen):
:func:`user_tool`.

The patches are installed when a recording or a replay starts and the program has imported the framework
(:func:`stepfork.trace._after_import.capture_framework_tools`); they change the framework's classes, so
tools made before the session are covered, and a function is wrapped the first time its tool runs under a
session (pydantic-ai's calls are taken at the toolset, no function is wrapped). Outside a session a wrapped
tool costs one ContextVar read. Nothing here imports a framework.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.instrument import is_instrumented, tool_boundary

_PATCHED = "__stepfork_framework_patch__"

_OWN_PACKAGES = (
    "agents",
    "langchain_core",
    "langchain",
    "langgraph",
    "smolagents",
    "llama_index.core",
    "crewai",
    "pydantic_ai",
)
"""Packages whose functions are the frameworks' own tools (module docstring): never recorded here."""

_MCP_ADAPTERS = ("langchain_mcp_adapters", "mcpadapt", "llama_index.tools.mcp", "crewai_tools.adapters")
"""Packages whose tools are MCP tools, recorded at the MCP boundary (``SERVER/TOOL``)."""

_OUTSIDE_TOOLS = ("pydantic_ai.common_tools",)
"""Framework packages whose tools are recorded all the same: pydantic-ai's common tools reach outside the
agent (DuckDuckGo, Tavily, Exa, a web page, a subagent's model), DuckDuckGo's through a Rust HTTP client
(``primp``) that neither a Stepfork boundary nor the replay's seal sees."""


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _module_of(func: Any) -> str:
    with contextlib.suppress(ValueError):  # a __wrapped__ cycle: the outer function's module
        func = inspect.unwrap(func)
    func = getattr(func, "__func__", func)  # a bound method: its function
    while isinstance(func, functools.partial):
        func = func.func
    return str(getattr(func, "__module__", None) or "")


def user_tool(func: Any) -> bool:
    """True when ``func`` is a tool function to record here: callable, not already a tool boundary, and
    defined outside the frameworks (``_OWN_PACKAGES``) and the MCP adapters (module docstring), or among the
    framework tools that reach outside (``_OUTSIDE_TOOLS``)."""
    if not callable(func) or is_instrumented(func):
        return False
    module = _module_of(func)
    return _within(module, _OUTSIDE_TOOLS) or not _within(module, _OWN_PACKAGES + _MCP_ADAPTERS)


def _patch(owner: Any, attribute: str, make: Callable[[Any], Any]) -> None:
    """Replace ``owner.attribute`` with ``make(original)`` once (a second install leaves it)."""
    original = owner.__dict__.get(attribute) if isinstance(owner, type) else getattr(owner, attribute, None)
    if original is None or getattr(original, _PATCHED, False):
        return
    patched = make(original)
    setattr(patched, _PATCHED, True)
    setattr(owner, attribute, patched)


def _before(original: Any, prepare: Callable[[Any], None]) -> Any:
    """``original`` (a method, sync or async) calling ``prepare(self)`` first while a session is active."""
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def async_method(self: Any, *args: Any, **kwargs: Any) -> Any:
            if boundary._process_handlers:
                prepare(self)
            return await original(self, *args, **kwargs)

        return async_method

    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if boundary._process_handlers:
            prepare(self)
        return original(self, *args, **kwargs)

    return method


# -- OpenAI Agents SDK ---------------------------------------------------------------------------------


def _arguments(text: Any) -> Any:
    """The JSON arguments the model wrote (``'{"city": "Paris"}'``), parsed; text that is not JSON as is."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


def _return_type(func: Any) -> Any:
    """The return annotation of a tool's function (a replayed result is rebuilt into it), or None."""
    try:
        return _cached_return_type(func)
    except TypeError:  # an unhashable callable object
        return _hinted_return(func)


def _hinted_return(func: Any) -> Any:
    import typing

    try:
        return typing.get_type_hints(func).get("return")
    except Exception:  # unresolvable annotations: the JSON form is served
        return None


_cached_return_type = functools.lru_cache(maxsize=1024)(_hinted_return)


def _invoker_call(original: Any) -> Any:
    @functools.wraps(original)
    async def __call__(self: Any, ctx: Any, input: str) -> Any:
        handler, orphan = boundary.resolve_handler() if boundary._process_handlers else (None, False)
        tool = getattr(self, "_function_tool", None) if handler is not None else None
        func = self._get_wrapped_callable() if tool is not None else None
        if handler is None or tool is None or not user_tool(func):
            return await original(self, ctx, input)
        from stepfork.trace.jsonable import to_jsonable

        call = BoundaryCall(
            "tool",
            str(tool.name),
            to_jsonable(_arguments(input)),
            return_type=_return_type(func),
            function=f"{_module_of(func)}:{getattr(func, '__qualname__', tool.name)}",
        )
        return await handler.ahandle(call, lambda: original(self, ctx, input), orphan=orphan)

    return __call__


def install_agents(module: ModuleType) -> None:
    """``agents.tool``: the invoker of every ``@function_tool`` (``FunctionTool.on_invoke_tool``) records
    the call. A tool error the SDK turns into a message for the model (its default
    ``failure_error_function``) is that call's output; an exception leaving the invoker is its failure."""
    invoker = getattr(module, "_FailureHandlingFunctionToolInvoker", None)
    if isinstance(invoker, type) and hasattr(invoker, "_get_wrapped_callable"):
        _patch(invoker, "__call__", _invoker_call)


# -- LangChain / LangGraph -----------------------------------------------------------------------------


def _tool_name(tool: Any) -> str:
    return str(tool.name)


def _wrap_methods(tool: Any, base: type) -> None:
    """A subclass of the framework's ``base`` tool class written by the user: its ``_run``/``_arun``, on its
    class, named by each tool object's ``name``."""
    for klass in type(tool).__mro__:
        if klass is base:
            break
        for attribute in ("_run", "_arun"):
            method = klass.__dict__.get(attribute)
            if inspect.isfunction(method) and user_tool(method):
                setattr(klass, attribute, tool_boundary(method, _tool_name))


def _prepare_langchain(base: type) -> Callable[[Any], None]:
    def prepare(tool: Any) -> None:
        fields = tool.__dict__
        if "func" in fields or "coroutine" in fields:  # StructuredTool, Tool: the user's function
            for attribute in ("func", "coroutine"):
                func = fields.get(attribute)
                if user_tool(func):
                    fields[attribute] = tool_boundary(func, str(tool.name))
            return
        _wrap_methods(tool, base)

    return prepare


def install_langchain(module: ModuleType) -> None:
    """``langchain_core.tools.base``: ``BaseTool.run``/``arun`` (what ``invoke``/``ainvoke`` call) wrap the
    tool's function the first time it runs under a session."""
    base = module.BaseTool
    prepare = _prepare_langchain(base)
    for attribute in ("run", "arun"):
        _patch(base, attribute, lambda original: _before(original, prepare))


# -- smolagents ----------------------------------------------------------------------------------------


def _prepare_smolagents(tool: Any) -> None:
    forward = tool.forward
    if not user_tool(forward):
        return
    # a @tool function's forward is a copy of the function whose signature names `self`: bind the function's
    func = forward if inspect.ismethod(forward) else inspect.unwrap(forward)
    tool.forward = tool_boundary(func, str(tool.name), target=forward)


def install_smolagents(module: ModuleType) -> None:
    """``smolagents.tools``: ``Tool.__call__`` (how agents and the code interpreter call a tool) wraps the
    tool's ``forward`` the first time it runs under a session."""
    _patch(module.Tool, "__call__", lambda original: _before(original, _prepare_smolagents))


# -- LlamaIndex ----------------------------------------------------------------------------------------


def _prepare_llama_index(tool: Any) -> None:
    real = tool.__dict__.get("_real_fn")
    if not user_tool(real) or is_instrumented(tool._fn):
        return
    name = str(tool.metadata.get_name())
    tool._fn = tool_boundary(real, name, target=tool._fn)
    tool._async_fn = tool_boundary(real, name, target=tool._async_fn)


def install_llama_index(module: ModuleType) -> None:
    """``llama_index.core.tools.function_tool``: ``FunctionTool.call``/``acall`` wrap the tool's ``fn``
    and ``async_fn`` the first time it runs under a session."""
    for attribute in ("call", "acall"):
        _patch(module.FunctionTool, attribute, lambda original: _before(original, _prepare_llama_index))


# -- CrewAI --------------------------------------------------------------------------------------------


def _prepare_crewai_tool(tool: Any) -> None:
    fields = tool.__dict__
    func = fields.get("func")
    if user_tool(func):  # crewai's Tool (@tool): the user's function
        fields["func"] = tool_boundary(func, str(tool.name))


def _prepare_crewai_structured(structured: Any) -> None:
    original = structured.__dict__.get("_original_tool") or getattr(structured, "_original_tool", None)
    func = structured.__dict__.get("func")
    owner = getattr(func, "__self__", None)
    if owner is not None and "func" in getattr(owner, "__dict__", {}):  # a Tool's bound _run: its function
        _prepare_crewai_tool(owner)
    elif user_tool(func):  # a BaseTool subclass's bound _run, or a function given to the structured tool
        structured.__dict__["func"] = tool_boundary(func, str(structured.name))
    elif original is not None and "func" in getattr(original, "__dict__", {}):
        _prepare_crewai_tool(original)


def install_crewai(module: ModuleType) -> None:
    """``crewai.tools.base_tool`` (``BaseTool.run``/``arun``, ``Tool.run``/``arun``) and
    ``crewai.tools.structured_tool`` (``CrewStructuredTool.invoke``/``ainvoke``, how an agent calls a tool):
    the tool's function, or a ``BaseTool`` subclass's ``_run``/``_arun``, is wrapped the first time it runs
    under a session."""
    tool = getattr(module, "Tool", None)
    base = getattr(module, "BaseTool", None)
    if isinstance(tool, type) and isinstance(base, type) and module.__name__.endswith("base_tool"):
        for attribute in ("run", "arun", "_run", "_arun"):
            _patch(tool, attribute, lambda original: _before(original, _prepare_crewai_tool))
        for attribute in ("run", "arun"):
            _patch(base, attribute, lambda original: _before(original, lambda t: _wrap_methods(t, base)))
    structured = getattr(module, "CrewStructuredTool", None)
    if isinstance(structured, type):
        for attribute in ("invoke", "ainvoke"):
            _patch(structured, attribute, lambda original: _before(original, _prepare_crewai_structured))


# -- pydantic-ai ---------------------------------------------------------------------------------------


def _context_parameter(func: Any) -> list[str]:
    """``[name]`` of a ``RunContext`` tool's first parameter (``ctx``), listed under ``"$excluded"`` as
    ``@trace_tool`` lists it; ``[]`` when the signature cannot be read."""
    try:
        return list(inspect.signature(func).parameters)[:1]
    except (TypeError, ValueError):
        return []


def _toolset_call(original: Any) -> Any:
    @functools.wraps(original)
    async def call_tool(self: Any, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        handler, orphan = boundary.resolve_handler() if boundary._process_handlers else (None, False)
        schema = getattr(getattr(tool, "call_func", None), "__self__", None) if handler is not None else None
        func = getattr(schema, "function", None)
        if handler is None or not user_tool(func):
            return await original(self, name, tool_args, ctx, tool)
        from stepfork.trace.context_args import EXCLUDED_KEY
        from stepfork.trace.jsonable import to_jsonable

        arguments = dict(tool_args)
        if getattr(schema, "takes_ctx", False):  # the RunContext is not an input: named, as @trace_tool does
            arguments[EXCLUDED_KEY] = _context_parameter(func)
        call = BoundaryCall(
            "tool",
            str(name),
            to_jsonable(arguments),
            return_type=_return_type(func),
            function=f"{_module_of(func)}:{getattr(func, '__qualname__', name)}",
        )
        return await handler.ahandle(call, lambda: original(self, name, tool_args, ctx, tool), orphan=orphan)

    return call_tool


def install_pydantic_ai(module: ModuleType) -> None:
    """``pydantic_ai.toolsets.function``: ``FunctionToolset.call_tool``, which every function tool passes
    (``@agent.tool``, ``@agent.tool_plain``, ``Tool(...)``, a ``FunctionToolset``; sync ones before they
    go to a worker thread), records the call with the validated arguments (its timeout, which pydantic-ai
    turns into ``ModelRetry``, included)."""
    _patch(module.FunctionToolset, "call_tool", _toolset_call)


INSTALLERS: dict[str, Callable[[ModuleType], None]] = {
    "agents.tool": install_agents,
    "langchain_core.tools.base": install_langchain,
    "smolagents.tools": install_smolagents,
    "llama_index.core.tools.function_tool": install_llama_index,
    "crewai.tools.base_tool": install_crewai,
    "crewai.tools.structured_tool": install_crewai,
    "pydantic_ai.toolsets.function": install_pydantic_ai,
}
"""The module of each framework whose import installs its patch, and the installer."""


def install(module: ModuleType) -> None:
    """Install the patch of the framework module ``module`` (one of :data:`INSTALLERS`); a release whose
    classes do not have the expected shape is left as it is."""
    installer = INSTALLERS.get(module.__name__)
    if installer is None:
        return
    try:
        installer(module)
    except AttributeError:  # another release of the framework: its tools stay as they are
        return
