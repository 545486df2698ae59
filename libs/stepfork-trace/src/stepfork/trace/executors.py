"""Work the agent submits to a thread pool runs in the agent's session context.

A ``concurrent.futures.ThreadPoolExecutor`` runs each submitted function on a worker thread of its own,
and Python does not copy the submitter's context into it (``asyncio.to_thread`` does; OpenTelemetry's
threading instrumentation wraps ``submit`` to carry its context). Without this module an agent that fans
its tool calls out with ``pool.map`` made them from "a thread without the session in its context": its
requests were recorded as background ``http`` calls, which a replay may leave out, so a buggy version that
dropped its refund POST replayed COMPLETED (a newcomer's report, finding 2).

The rule, the same while recording and while replaying: ``ThreadPoolExecutor.submit`` (and so ``map``
and ``loop.run_in_executor``) called from a context holding a session whose ``submit_carries_context``
is true carries Stepfork's context variables (the active session, the recording scope, the HTTP capture's
nesting flag: :func:`carry`) into the worker for the time the submitted function runs. Its calls are the
agent's (``background: false`` in ``concurrency.json``), nested under the call that submitted them, in the
agent's order as LLM calls, and a request of theirs that a replay never makes is missing
(``request_not_made``). Only Stepfork's variables travel: the agent's own context variables behave in the
worker as they do without Stepfork, since a recording must not change what the agent does.

What stays background: a thread started with ``threading.Thread`` or ``threading.Timer`` (a library's
poller, LiteLLM's model-cost-map retry, which LiteLLM starts from inside the agent's own call: who started
a thread cannot tell a library from the agent), a ``multiprocessing.pool.ThreadPool``, and work submitted
from a thread that has no session in its context itself. Start such a thread with
``contextvars.copy_context().run`` to make it the agent's (docs/replay.md, "Requests outside the agent's
order"; docs/decisions.md).

The session decides whether it carries: a recording always does and says so in its ``concurrency.json``
(``submit_carries_context``); a replay does when the bundle says so, so a bundle recorded before this rule
replays as it was recorded (its pool's requests background, its pool's LLM calls ``http`` calls). Work that
starts after its session ended runs without it, as if no session had been active; a replay session that
ends while work submitted under it still runs is told (``note_submitted``) so it can wait for that work
before it calls a recorded call missing.

Cost: nothing per instrumented call (the boundary reads one ContextVar, as before); per ``submit``, one
ContextVar read when the submitter has no session, and a few more when it has one. ``install`` wraps
``submit`` once per process, when the first session starts.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from stepfork.trace import boundary

_CARRIED: list[ContextVar[Any]] = [boundary._active_handler]
"""The context variables whose values travel into submitted work; the active session first."""

_installed = False
_install_lock = threading.Lock()


def carry(variable: ContextVar[Any]) -> None:
    """Carry ``variable``'s value (it must have a default) into work submitted under a session, as the
    active session's is (module docstring). Called once, at import, by the module owning the variable."""
    if variable not in _CARRIED:
        _CARRIED.append(variable)


def install() -> None:
    """Wrap ``concurrent.futures.ThreadPoolExecutor.submit`` so that work submitted under a session runs in
    it (module docstring). Idempotent and thread-safe; the wrapper stays for the life of the process and
    does nothing when the submitter has no session (one ContextVar read)."""
    global _installed
    if _installed:
        return
    from concurrent import futures
    from concurrent.futures import ThreadPoolExecutor

    with _install_lock:
        if _installed:
            return
        original: Callable[..., Any] = ThreadPoolExecutor.submit
        active = boundary._active_handler
        # a subclass whose work runs in another interpreter (Python 3.14) shares no objects with this one
        apart = tuple(c for c in (getattr(futures, "InterpreterPoolExecutor", None),) if c is not None)

        @functools.wraps(original)
        def submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            handler = active.get()
            if (
                handler is None
                or not getattr(handler, "submit_carries_context", False)
                or (apart and isinstance(self, apart))
            ):
                return original(self, fn, *args, **kwargs)
            values = tuple((variable, variable.get()) for variable in _CARRIED)
            future = original(self, _run_carried, handler, values, fn, args, kwargs)
            note = getattr(handler, "note_submitted", None)
            if note is not None:
                note(future)
            return future

        ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]
        _installed = True


def _run_carried(
    handler: Any,
    values: tuple[tuple[ContextVar[Any], Any], ...],
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Run ``fn(*args, **kwargs)`` on the worker with ``values`` set, then put the worker's own values back
    (the next work item on this thread must not inherit them). Without them when ``handler`` has ended."""
    if not boundary.is_active(handler):  # the session ended before the work ran: as without Stepfork
        return fn(*args, **kwargs)
    tokens = [(variable, variable.get(), variable.set(value)) for variable, value in values]
    try:
        return fn(*args, **kwargs)
    finally:
        for variable, before, token in reversed(tokens):
            try:
                variable.reset(token)
            except ValueError:  # reset from another context than the one that set it: restore by value
                variable.set(before)


class SubmittedWork:
    """The work a session's ``note_submitted`` was told of that has not finished; thread-safe.

    A replay session keeps one: when its run ends with recorded calls still expected (an ``http`` call of
    the agent's not made, an LLM call not consumed), work the agent submitted and did not wait for (a
    fire-and-forget ``pool.submit``) may be about to make them; :meth:`wait` gives it that time before the
    verdict, while the session still serves. A recording does not wait: a production run ends when its
    block does.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: set[Any] = set()

    def add(self, future: Any) -> None:
        """Track ``future`` (a ``concurrent.futures.Future``) until it is done or cancelled."""
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._discard)  # runs at once when already done

    def _discard(self, future: Any) -> None:
        with self._lock:
            self._pending.discard(future)

    def __bool__(self) -> bool:
        """True while some tracked work has not finished."""
        with self._lock:
            return bool(self._pending)

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the tracked work to finish; True when none is left."""
        from concurrent.futures import wait

        with self._lock:
            pending = list(self._pending)
        if not pending:
            return True
        _, left = wait(pending, timeout=timeout)
        return not left
