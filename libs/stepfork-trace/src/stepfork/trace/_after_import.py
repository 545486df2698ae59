"""Run a callback once a module is imported, without importing it (the zero-code capture, the MCP boundary,
the framework tools).

Here in the core, not among the integrations: a recording or a replay asks for the MCP boundary and the
framework tools on every start (:func:`capture_mcp_sessions`, :func:`capture_framework_tools`), and the
core imports no integration until the SDK it wraps is imported by the program.

:func:`after_import` calls ``callback(module)`` at once when the module is imported already, else right
after the program imports it: a ``sys.meta_path`` finder, first in the list, finds the module with the
other finders and wraps its loader, so the callback runs once the module's code has run (a package's
``__init__`` included). Nothing is imported ahead of the program: an SDK that takes a second to import
costs nothing to an agent that never imports it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType

Callback = Callable[[ModuleType], None]

_callbacks: dict[str, list[Callback]] = {}
_guard = threading.local()
_lock = threading.Lock()


def after_import(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` for the module ``name`` (top-level or dotted): now when it is imported (and
    done importing), and right after each later import of it (a module imported again after leaving
    ``sys.modules``). Registering the same callback twice for a name registers it once.

    A module imported but still running its own code (the callback was registered from inside its import)
    gets the callback when that import ends."""
    with _lock:
        waiting = _callbacks.setdefault(name, [])
        if callback not in waiting:
            waiting.append(callback)
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    module = sys.modules.get(name)
    if module is not None and not _importing(module):
        callback(module)


def _importing(module: ModuleType) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, name: str) -> None:
        self.inner = inner
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        with _lock:
            callbacks = list(_callbacks.get(self.name, ()))
        for callback in callbacks:
            callback(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the modules :func:`after_import` waits for with the other finders, and wraps their loader."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _callbacks or getattr(_guard, "busy", False):
            return None
        _guard.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            _guard.busy = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, fullname)
        return spec


def capture_mcp_sessions() -> None:
    """Make every ``mcp.ClientSession`` made from now on an instrumented boundary, as ``instrument_mcp``
    does, from the moment the program imports the SDK (now, when it has; never importing it otherwise):
    what a recording or a replay does for the sessions the user did not instrument (docs/decisions.md,
    "MCP sessions the agent did not instrument"). Idempotent, and cheap after its first call.

    Recording, their requests are recorded as tool calls; replaying in any mode but ``live``, they are
    served from the recording or refused by name (a divergence), and the server is never started
    (:mod:`stepfork.integrations._mcp_transports`); in a ``live`` replay they go out untouched
    (``BoundaryDispatcher.auto``, :mod:`stepfork.integrations._mcp_calls`)."""
    global _capturing_mcp
    if _capturing_mcp:
        return
    _capturing_mcp = True
    after_import("mcp", _instrument_mcp_sessions)


_capturing_mcp = False


def _instrument_mcp_sessions(module: ModuleType) -> None:
    import contextlib

    with contextlib.suppress(ImportError):  # an SDK release Stepfork does not know: left as it is
        from stepfork.integrations import mcp

        mcp.enable(auto=True)


def capture_framework_tools() -> None:
    """Make the tools of the agent frameworks the program imports (the OpenAI Agents SDK, LangChain and
    LangGraph, smolagents, LlamaIndex, CrewAI, pydantic-ai) instrumented boundaries, as ``@trace_tool``
    makes a function one, from the moment the program imports the framework (now, when it has; never
    importing it otherwise): what a recording and a replay do for the tools the user did not decorate
    (docs/decisions.md, "Framework tools"; :mod:`stepfork.integrations._framework_tools`). Idempotent, and
    cheap after its first call."""
    global _capturing_tools
    if _capturing_tools:
        return
    _capturing_tools = True
    for name in _FRAMEWORK_MODULES:
        after_import(name, _instrument_framework_tools)


_capturing_tools = False
_FRAMEWORK_MODULES = (
    "agents.tool",
    "langchain_core.tools.base",
    "smolagents.tools",
    "llama_index.core.tools.function_tool",
    "crewai.tools.base_tool",
    "crewai.tools.structured_tool",
    "pydantic_ai.toolsets.function",
)
"""The framework modules whose classes :mod:`stepfork.integrations._framework_tools` patches (its
``INSTALLERS``)."""


def _instrument_framework_tools(module: ModuleType) -> None:
    from stepfork.integrations._framework_tools import install

    install(module)
