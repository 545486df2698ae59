"""The instrumented boundary: the one interface recording and replay share (docs/architecture.md).

An instrumented call (a ``@trace_tool`` function, ``llm_request``/``allm_request``) is described by a
:class:`BoundaryCall` and handed, with its body, to the *active handler*: a ``RecordingSession``, a
``ReplaySession`` (stepfork.replay) or nothing. The active handler lives in a ``contextvars.ContextVar``,
so asyncio tasks and threads started with ``contextvars.copy_context()`` see it. With no handler the body
runs untouched: the no-op default, as in OpenTelemetry's API/SDK split.

Threads without the context. A call that escapes the session silently is the worst bug this product can
have, so the boundary also keeps a process-wide registry of active sessions. A call whose context holds
no handler while sessions are active in the process is an *orphan*:

- exactly one session active: that session decides (``handle(..., orphan=True)``): a recording session
  records the call under the run and warns once with :class:`OrphanCallWarning`; a replay session
  serves it through the usual checks, also warning once;
- more than one: :class:`~stepfork.trace.errors.BoundaryContextError`, because guessing would be wrong.
  Sessions a handler *stands for* are not counted: a handler whose ``stands_for`` names other active
  sessions (``stepfork fork``: its replay session and its recording) dispatches their calls itself, so
  with it they are one session to an orphan, which goes to it as to a lone replay or recording.

A replay in the process. While a replay is being prepared (its entrypoint's module imported:
:func:`preparing_replay`) or runs (a session with ``is_replay`` registered), :func:`replay_in_process` is
True: ``record()`` entered outside the replay's context is then refused
(``stepfork.trace.recording``), because nothing would serve its calls but the live dependencies.

Work submitted to a ``ThreadPoolExecutor`` under a session is not an orphan: :mod:`stepfork.trace.executors`
carries the session into it (the agent's work); a ``threading.Thread`` is (a library's background thread).

Forked children. A session belongs to the process that started it: a child made by ``os.fork`` (or a
``multiprocessing`` pool forking) forgets every session (:func:`_forget_sessions_in_child`), so its
instrumented calls run untouched, as a subprocess's would, instead of writing into the parent's bundle.

This module imports nothing heavy (no pydantic): decorated functions cost one ContextVar read when no
session is active.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from stepfork.trace.errors import BoundaryContextError

T = TypeVar("T")

CallKind = Literal["tool", "llm"]


@dataclass(frozen=True, slots=True, init=False)
class BoundaryCall:
    """One instrumented dependency call, as recording and replay see it.

    Attributes:
        kind: ``"tool"`` or ``"llm"``.
        name: the tool name; for an LLM call, the model.
        input: the call's input as a JSON value (already turned into JSON by ``to_jsonable``, tagged
            forms included) and *not yet redacted*: each handler redacts before writing or comparing.
            For tools: the signature-bound arguments with defaults applied, ``self``/``cls`` dropped.
        provider: the LLM provider (``"openai"``), or None (tools, or unknown provider).
        model: the LLM model, or None for tools.
        replay_policy: the per-call policy the call site asked for (``frozen``, ``live``, ``manual``,
            ``forbidden``, ``derived``; interop/REFERENCE-NOTES.md 1.6).
        return_type: the tool's return annotation, used by replay to rebuild the recorded output into
            the declared type (``None`` when there is no annotation).
        function: the qualified name of the instrumented function (``module:qualname``), for
            diagnostics only; never imported.
        reads_output: True when the caller only *reads* the value the handler returns (with
            ``return_type`` None) and never changes it: replay may then hand back the recorded JSON
            itself instead of a fresh copy. The HTTP capture sets it: it turns the output into response
            bytes at once. False (default): the agent gets a value of its own.
    """

    kind: CallKind
    name: str
    input: Any
    provider: str | None = None
    model: str | None = None
    replay_policy: str = "frozen"
    return_type: Any = None
    function: str | None = None
    reads_output: bool = False

    def __init__(
        self,
        kind: CallKind,
        name: str,
        input: Any,
        provider: str | None = None,
        model: str | None = None,
        replay_policy: str = "frozen",
        return_type: Any = None,
        function: str | None = None,
        reads_output: bool = False,
    ) -> None:
        """Set the fields (see the class docstring); a missing ``kind``, ``name`` or ``input`` raises
        TypeError, as the generated dataclass ``__init__`` does, and the instance is frozen after."""
        # The generated frozen __init__ with the slots' own setters: one BoundaryCall is built per
        # instrumented call, and the generated one (object.__setattr__ looked up per field) cost twice this.
        _set_kind(self, kind)
        _set_name(self, name)
        _set_input(self, input)
        _set_provider(self, provider)
        _set_model(self, model)
        _set_replay_policy(self, replay_policy)
        _set_return_type(self, return_type)
        _set_function(self, function)
        _set_reads_output(self, reads_output)

    @property
    def label(self) -> str:
        """The name the spec uses for this call: the tool name, ``provider/model``, or ``model``."""
        if self.kind == "tool":
            return self.name
        if self.provider:
            return f"{self.provider}/{self.model or self.name}"
        return self.model or self.name


_slot: Any = BoundaryCall.__dict__  # the slot descriptors of the fields (set once, by __init__)
_set_kind, _set_name, _set_input, _set_provider = (
    _slot[n].__set__ for n in ("kind", "name", "input", "provider")
)
_set_model, _set_replay_policy, _set_return_type, _set_function, _set_reads_output = (
    _slot[n].__set__ for n in ("model", "replay_policy", "return_type", "function", "reads_output")
)


@runtime_checkable
class BoundaryHandler(Protocol):
    """What a session implements to receive instrumented calls.

    ``handle`` runs (or replaces) a synchronous body; ``ahandle`` an asynchronous one. Both return what the
    instrumented call returns to the agent, or raise. ``orphan`` is True when the call came from a context
    without the handler (a thread started without ``copy_context()``); see the module docstring.

    ``is_replay`` tells recording apart from replay without importing stepfork.replay: a recording
    session opened while a replay handler is active is inert (it writes nothing).
    """

    is_replay: bool

    def handle(self, call: BoundaryCall, body: Callable[[], T], *, orphan: bool = False) -> T:
        """Run or replace ``body`` for ``call`` and return its result; may raise."""
        ...

    async def ahandle(
        self, call: BoundaryCall, body: Callable[[], Awaitable[T]], *, orphan: bool = False
    ) -> T:
        """Await or replace ``body()`` for ``call`` and return its result; may raise."""
        ...


_active_handler: ContextVar[BoundaryHandler | None] = ContextVar("stepfork_active_handler", default=None)

# Sessions active anywhere in this process; read only when a call finds no handler in its context.
_process_handlers: list[BoundaryHandler] = []
_process_lock = threading.Lock()
# Entrypoint imports in progress for a replay (preparing_replay); read when a recording starts.
_replays_preparing = 0


def active_handler() -> BoundaryHandler | None:
    """Return the handler active in the current context, or None. Cheap: one ContextVar read."""
    return _active_handler.get()


def resolve_handler() -> tuple[BoundaryHandler | None, bool]:
    """Find the handler an instrumented call must go to.

    Returns:
        ``(handler, orphan)``: the context's handler and False; or, when the context has none but exactly
        one session is active in the process (not counting the sessions another active handler stands
        for: module docstring), that session and True; or ``(None, False)`` when no session is active at
        all (the body runs untouched).

    Raises:
        BoundaryContextError: the context has no handler and several sessions are active in the process.
    """
    handler = _active_handler.get()
    if handler is not None:
        return handler, False
    if not _process_handlers:
        return None, False
    with _process_lock:
        handlers = list(_process_handlers)
    if not handlers:
        return None, False
    if len(handlers) > 1:  # the orphan path only: a fork's parts are taken by the fork
        covered = {id(part) for registered in handlers for part in getattr(registered, "stands_for", ())}
        handlers = [registered for registered in handlers if id(registered) not in covered]
    if len(handlers) > 1:
        raise BoundaryContextError(
            "an instrumented call arrived from a thread without the session's context while "
            f"{len(handlers)} Stepfork sessions are active; start the thread with "
            "contextvars.copy_context().run(...) so the call reaches its session"
        )
    return handlers[0], True


def handler_for_call(handler: BoundaryHandler) -> BoundaryHandler:
    """The handler that takes the one call about to start: ``handler.handler_for_call()`` when ``handler``
    has that method, else ``handler`` itself.

    A handler whose part changes during the run (``stepfork fork``: a replay up to its fork point, a
    recording from there on; ``stepfork.analysis.forking``) hands each call to the part it belongs to. An
    integration that takes another path for a replay than for a recording (the HTTP captures: a response
    rebuilt from the recording, or the live response recorded as it streams) asks here once per call, so
    the path it takes and the part that serves the call agree. A handler without the method (a recording,
    a replay) is one part for the whole run.
    """
    pick = getattr(handler, "handler_for_call", None)
    return handler if pick is None else pick()


def is_active(handler: BoundaryHandler) -> bool:
    """True while ``handler`` is registered as an active session of this process (between
    :func:`activate` and :func:`deactivate`; a forked child has none)."""
    with _process_lock:
        return any(registered is handler for registered in _process_handlers)


def activate(handler: BoundaryHandler) -> Token[BoundaryHandler | None]:
    """Make ``handler`` active in the current context and register it process-wide.

    Returns the token to pass to :func:`deactivate`.
    """
    with _process_lock:
        _process_handlers.append(handler)
    return _active_handler.set(handler)


def deactivate(handler: BoundaryHandler, token: Token[BoundaryHandler | None]) -> None:
    """Undo :func:`activate`.

    The ContextVar is reset with its token when we are in the context that set it; when the session is
    closed from another context (an async generator finalized by another task, a known trap), the reset
    would raise ValueError, so the variable is set back to None there instead: the registry entry is what
    matters for orphans and it is always removed.
    """
    with _process_lock:
        for index, registered in enumerate(_process_handlers):
            if registered is handler:
                del _process_handlers[index]
                break
    try:
        _active_handler.reset(token)
    except ValueError:
        if _active_handler.get() is handler:
            _active_handler.set(None)


def replay_in_process() -> bool:
    """True while a replay is being prepared (:func:`preparing_replay`) or a session with ``is_replay``
    is active anywhere in this process (any thread, any context); False otherwise. Read when a recording
    starts, never on a call's path."""
    with _process_lock:
        return _replays_preparing > 0 or any(handler.is_replay for handler in _process_handlers)


@contextmanager
def preparing_replay() -> Iterator[None]:
    """While the block runs, :func:`replay_in_process` is True: a replay is about to run in this process
    (``stepfork.replay.entrypoint.resolve_entrypoint`` imports the entrypoint's module in it, before the
    session is entered). Nestable and thread-safe; a forked child starts outside any block."""
    global _replays_preparing
    with _process_lock:
        _replays_preparing += 1
    try:
        yield
    finally:
        with _process_lock:
            _replays_preparing = max(0, _replays_preparing - 1)  # 0 in a child forked inside the block


def _forget_sessions_in_child() -> None:
    """``os.register_at_fork`` hook: the forked child has no active session (module docstring). The
    forking thread's context is the only one the child runs on at first; the lock may have been held by
    another parent thread at the fork, so the child gets a fresh one."""
    global _process_lock, _replays_preparing
    _process_lock = threading.Lock()
    _replays_preparing = 0
    _process_handlers.clear()
    _active_handler.set(None)


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_sessions_in_child)


def caller_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by the caller of this function that names the first
    frame outside Stepfork's packages: a warning about the user's call (an orphan call) points at the user's
    line, however many Stepfork frames (decorator, session, transport) lie between (Python 3.12's
    ``skip_file_prefixes``, for 3.11)."""
    import stepfork  # imported already: the parent of this very module

    prefixes = tuple(os.path.join(path, "") for path in stepfork.__path__)
    frame: FrameType | None = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(prefixes):
        frame = frame.f_back
        level += 1
    return level


@contextmanager
def using_handler(handler: BoundaryHandler) -> Iterator[BoundaryHandler]:
    """Context manager form of :func:`activate`/:func:`deactivate`; yields ``handler``."""
    token = activate(handler)
    try:
        yield handler
    finally:
        deactivate(handler, token)
