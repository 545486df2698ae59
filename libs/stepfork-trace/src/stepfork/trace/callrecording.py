"""How a recording session records each instrumented call (the handler half of ``RecordingSession``).

For every call handed over by the boundary: the call event (``tool_call``/``llm_request``) under the
enclosing call or ``run_start``; the body run with the call's scope pushed (a ContextVar of immutable nodes,
so asyncio tasks and copied contexts nest right, C6); then ``tool_result``/``llm_response`` with
``duration_ms``, or, when the body raised, ``tool_result`` with status ``error`` and output
``{"error_type", "message"}`` plus an ``error`` event carrying the qualified type name, the message and
``details = {"chain": [...]}`` (C8), before the original exception is re-raised untouched
(REFERENCE-NOTES.md 1.4-1.5). An LLM failure writes only the error event, under the request.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from stepfork.trace import executors
from stepfork.trace.boundary import BoundaryCall, caller_stacklevel
from stepfork.trace.http_calls import is_http_call
from stepfork.trace.instrument import LLMOutput, _check_policy, _jsonable

if TYPE_CHECKING:
    from stepfork.trace.concurrency import ConcurrencyLog
    from stepfork.trace.eventlog import EventLog

T = TypeVar("T")

_ORPHAN_LOCK = threading.Lock()


@dataclass(eq=False)
class OpenCall:
    """A call recorded by :meth:`CallRecorder.open_call` whose result is not recorded yet.

    Attributes: ``call``, ``call_id`` (the call event id), ``started`` (perf_counter_ns), ``snapshot``
    (what to record if the session ends first), ``closed``.
    """

    call: BoundaryCall
    call_id: str
    started: int
    snapshot: Callable[[], Any]
    closed: bool = False


class _Finished(RuntimeError):
    """Raised by ``_require_log`` after the session finished; an instrumented call that meets it (work
    still running in the session's context: a pool's task, an asyncio task that outlived the block) runs
    untouched instead, as with no session, since recording must never break the agent."""


class OrphanCallWarning(RuntimeWarning):
    """An instrumented call came from a thread without the session's context and was recorded anyway.

    Warned once per session. The call is recorded under ``run_start``; start threads with
    ``contextvars.copy_context().run(...)`` (or ``asyncio.to_thread``) so calls nest under their caller.
    """


# The scope stack: (session, event id, enclosing scope). Immutable nodes in a ContextVar, so each task or
# copied context sees its own top and nesting follows the call tree (REFERENCE-NOTES.md 1.5).
_Scope = tuple["CallRecorder", str, Any]
_scope: ContextVar[_Scope | None] = ContextVar("stepfork_recording_scope", default=None)
executors.carry(_scope)  # work submitted to a thread pool nests under the call that submitted it


class LLMCallHandle:
    """Yielded by :meth:`RecordingSession.llm_call`: set the response with :meth:`set_output`.

    Attributes: ``request_id`` (the llm_request event id, None when inert), ``model``, ``output`` and the
    token and cost fields, as set.
    """

    def __init__(self, request_id: str | None, model: str) -> None:
        self.request_id = request_id
        self.model = model
        self.output: Any = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.total_tokens: int | None = None
        self.cost_usd: float | None = None

    def set_output(
        self,
        value: Any,
        *,
        model: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        total_tokens: int | None = None,
        cost_usd: float | None = None,
    ) -> None:
        """Set the response recorded when the ``llm_call`` block ends (value converted with to_jsonable)."""
        self.output = value
        if model is not None:
            self.model = model
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.total_tokens = total_tokens
        self.cost_usd = cost_usd


class CallRecorder:
    """The boundary-handler half of :class:`~stepfork.trace.recording.RecordingSession`.

    Records each instrumented call as its call event, the body run in its scope, then its result or its
    failure (REFERENCE-NOTES.md 1.4-1.5, C8); also the scope API and the hand-made ``llm_call``. The
    session sets ``run_id``, ``_log`` (None when inert), ``_root_id``, ``_finished``,
    ``_open_call_list`` (an empty list), ``_inflight`` (an empty dict) and ``_calls_lock`` (an RLock).

    A call's event and its registration as in flight happen under ``_calls_lock``, and so do its outcome
    and the end of the session (:meth:`_close_inflight`), so every call event written gets exactly one
    outcome: its own, or, when the run ended first (a daemon thread's request still running at exit),
    an :class:`~stepfork.trace.errors.UnfinishedCallError` failure (docs/recording.md, "Calls still
    running when the run ends").
    """

    is_replay = False
    run_id: str
    _log: EventLog | None
    _concurrency: ConcurrencyLog | None = None
    _root_id: str
    _finished: bool
    _orphan_warned: bool
    _open_call_list: list[OpenCall]
    _inflight: dict[str, tuple[BoundaryCall, int]]  # call event id -> (call, perf_counter_ns at start)
    _calls_lock: threading.RLock

    # -- helpers ---------------------------------------------------------------------------------------

    serializer: Callable[[Any], Any] | None = None

    def _jsonable(self, value: Any) -> Any:
        serializer = self.serializer
        if serializer is None:
            return _jsonable(value)
        return _jsonable(value, serializer)

    def _require_log(self) -> EventLog | None:
        if self._finished:
            raise _Finished("the recording session has finished; no more events can be recorded")
        return self._log

    def _parent(self) -> str:
        node = _scope.get()
        while node is not None:
            if node[0] is self:
                return node[1]
            node = node[2]
        return self._root_id

    def _warn_orphan(self) -> None:
        with _ORPHAN_LOCK:  # once per session, even when orphan threads race
            first = not self._orphan_warned
            self._orphan_warned = True
        if first:
            warnings.warn(
                OrphanCallWarning(
                    f"an instrumented call reached recording {self.run_id} from a thread without its "
                    "context; it is recorded under run_start. Start threads with "
                    "contextvars.copy_context().run(...) so calls nest under their caller."
                ),
                stacklevel=caller_stacklevel(),
            )

    def _emit_error(
        self, exc: BaseException, *, parent_id: str, flush: bool = True
    ) -> tuple[str, int, dict[str, Any]]:
        from stepfork.trace.control_flow import CONTROL_FLOW_KEY, describe, stable_message
        from stepfork.trace.eventlog import exception_chain, exception_message, qualified_type_name

        log = self._log
        assert log is not None
        details: dict[str, Any] = {"chain": exception_chain(exc)}
        control = describe(exc)  # a framework signal (interrupt, retry...): its payload, for replay
        if control is not None:
            details[CONTROL_FLOW_KEY] = control
        fields = {
            "error_type": qualified_type_name(exc),
            "message": stable_message(exc, control) or exception_message(exc),
            "details": details,
        }
        return log.emit("error", fields, parent_id=parent_id, status="error", flush=flush)

    # -- the boundary handler --------------------------------------------------------------------------

    def _begin(self, call: BoundaryCall, orphan: bool) -> tuple[str, Token[_Scope | None], int]:
        """Write the call event and note the call in flight; return ``(call id, scope token, started ns)``.
        Raises _Finished once the session finished (the call then runs untouched)."""
        with self._calls_lock:
            call_id = self._emit_call(call, orphan)
            started = time.perf_counter_ns()
            self._inflight[call_id] = (call, started)
        token = _scope.set((self, call_id, _scope.get()))
        return call_id, token, started

    def _settle(self, call: BoundaryCall, call_id: str, result: Any, started: int) -> None:
        """Record the result of a call noted in flight by :meth:`_begin`, unless the run ended first."""
        with self._calls_lock:
            if self._inflight.pop(call_id, None) is not None:
                self._succeed(call, call_id, result, started)

    def _settle_failure(self, call: BoundaryCall, call_id: str, exc: BaseException, started: int) -> None:
        """:meth:`_settle` of a failure (:meth:`_record_failure`)."""
        with self._calls_lock:
            if self._inflight.pop(call_id, None) is not None:
                self._record_failure(call, call_id, exc, started)

    def _close_inflight(self) -> None:
        """End the session's calls: mark it finished (a call arriving now runs untouched), record each
        still-open stream as its consumer left it, and each call still running (a daemon thread's request
        at exit) as failed with :class:`~stepfork.trace.errors.UnfinishedCallError`, so no call event is
        left without an outcome (strict validation's ``unpaired_call``)."""
        from stepfork.trace.errors import UnfinishedCallError

        with self._calls_lock:
            self._close_open_calls()
            self._finished = True
            running = list(self._inflight.items())
            self._inflight.clear()
            for call_id, (call, started) in running:
                self._record_failure(call, call_id, UnfinishedCallError(), started)

    def _emit_call(self, call: BoundaryCall, orphan: bool) -> str:
        log = self._require_log()
        assert log is not None
        if orphan and not (call.kind == "tool" and is_http_call(call.name)):
            self._warn_orphan()  # an http call from another thread is expected (a background request)
        parent = self._root_id if orphan else self._parent()
        if call.kind == "tool":
            call_id = log.emit_tool("tool_call", call.name, call.input, parent, call.replay_policy)
        else:
            fields = {"provider": call.provider, "model": call.model or call.name, "input": call.input}
            call_id = log.emit_line("llm_request", fields, parent, call.replay_policy)
        if self._concurrency is not None:
            self._concurrency.start(call_id)
            if orphan:  # rare: kept apart, so the hot path's per-call entry stays as it was
                self._concurrency.note_background(call_id)
        return call_id

    def _succeed(self, call: BoundaryCall, call_id: str, result: Any, started: int) -> None:
        log = self._log
        assert log is not None
        duration = (time.perf_counter_ns() - started) // 1_000_000
        if self._concurrency is not None:
            self._concurrency.end(call_id)
        if call.kind == "tool":
            if isinstance(result, LLMOutput):  # an http call's response, as the HTTP capture gives it
                result = result.value
            try:
                output = None if result is None else self._jsonable(result)
            except Exception as error:  # the body ran but its result cannot be recorded: say so, loudly
                self._fail(call, call_id, error, started)
                raise
            log.emit_tool("tool_result", call.name, output, call_id, call.replay_policy, duration)
            return
        usage = result if isinstance(result, LLMOutput) else None
        value = usage.value if usage is not None else result
        try:
            output = self._jsonable(value)
        except Exception as error:
            self._fail(call, call_id, error, started)
            raise
        fields = {
            "model": call.model or call.name,
            "output": output,
            "prompt_tokens": usage.prompt_tokens if usage else None,
            "completion_tokens": usage.completion_tokens if usage else None,
            "total_tokens": usage.total_tokens if usage else None,
            "cost_usd": usage.cost_usd if usage else None,
        }
        log.emit_line("llm_response", fields, call_id, call.replay_policy, duration)

    def _fail(self, call: BoundaryCall, call_id: str, exc: BaseException, started: int) -> None:
        log = self._log
        assert log is not None
        if self._concurrency is not None:
            self._concurrency.end(call_id)
        if call.kind == "tool":
            from stepfork.trace.control_flow import describe, stable_message
            from stepfork.trace.eventlog import exception_message, qualified_type_name

            duration = (time.perf_counter_ns() - started) // 1_000_000
            message = stable_message(exc, describe(exc)) or exception_message(exc)
            output = {"error_type": qualified_type_name(exc), "message": message}
            result_id, _, _ = log.emit(
                "tool_result",
                {"name": call.name, "output": output},
                parent_id=call_id,
                status="error",
                duration_ms=duration,
                replay_policy=call.replay_policy,
                flush=False,
            )
            self._emit_error(exc, parent_id=result_id)
        else:  # an LLM failure: the error hangs off the request (REFERENCE-NOTES.md 1.5)
            self._emit_error(exc, parent_id=call_id)

    def _record_failure(self, call: BoundaryCall, call_id: str, exc: BaseException, started: int) -> None:
        try:
            self._fail(call, call_id, exc, started)
        except Exception as error:  # recording must never replace the agent's own exception
            exc.add_note(f"stepfork: the failure was not recorded: {type(error).__name__}: {error}")

    def handle(self, call: BoundaryCall, body: Callable[[], T], *, orphan: bool = False) -> T:
        """Record ``call``: its call event, ``body()`` run in its scope, then its result or failure.

        Returns ``body()``'s result unchanged; re-raises its exception unchanged after recording it. After
        the session finished, runs ``body()`` untouched (nothing recorded).
        """
        try:
            call_id, token, started = self._begin(call, orphan)
        except _Finished:
            return body()
        try:
            result = body()
        except BaseException as exc:
            self._settle_failure(call, call_id, exc, started)
            raise
        finally:
            _scope.reset(token)
        self._settle(call, call_id, result, started)
        return result

    async def ahandle(
        self, call: BoundaryCall, body: Callable[[], Awaitable[T]], *, orphan: bool = False
    ) -> T:
        """Async :meth:`handle`: awaits ``body()`` in the call's scope (untouched once the session ended)."""
        try:
            call_id, token, started = self._begin(call, orphan)
        except _Finished:
            return await body()
        try:
            result = await body()
        except BaseException as exc:
            self._settle_failure(call, call_id, exc, started)
            raise
        finally:
            _scope.reset(token)
        self._settle(call, call_id, result, started)
        return result

    # -- calls whose result outlives handle(): streamed responses (docs/integrations.md) ---------------

    def open_call(
        self, call: BoundaryCall, snapshot: Callable[[], Any], *, orphan: bool = False
    ) -> OpenCall | None:
        """Record the call event of a call that completes later (a streamed LLM response); no scope push.

        Args:
            call: the boundary call (kind ``llm`` for streams).
            snapshot: returns what to record (the value or an :class:`LLMOutput`) if the session ends
                while the call is still open (a consumer that never finished nor closed its stream).

        Returns:
            An :class:`OpenCall` to pass to :meth:`close_call` or :meth:`fail_call` (each idempotent),
            or None when the session is inert or has finished (the call is then not recorded).
        """
        with self._calls_lock:
            if self._finished or self._require_log() is None:
                return None
            opened = OpenCall(call, self._emit_call(call, orphan), time.perf_counter_ns(), snapshot)
            with _ORPHAN_LOCK:
                self._open_call_list.append(opened)
        return opened

    def _take_open(self, opened: OpenCall) -> bool:
        with _ORPHAN_LOCK:
            if opened.closed:
                return False
            opened.closed = True
            calls = self._open_call_list
            if opened in calls:
                calls.remove(opened)
        return True

    def close_call(self, opened: OpenCall | None, result: Any) -> None:
        """Record the result of an open call (``llm_response``); a no-op when None or already closed."""
        if opened is None or self._log is None:
            return
        with self._calls_lock:  # not while the session ends (_close_inflight)
            if self._take_open(opened):
                self._succeed(opened.call, opened.call_id, result, opened.started)

    def fail_call(self, opened: OpenCall | None, exc: BaseException) -> None:
        """Record the failure of an open call (an error event under it); a no-op when None or closed."""
        if opened is None or self._log is None:
            return
        with self._calls_lock:
            if self._take_open(opened):
                self._record_failure(opened.call, opened.call_id, exc, opened.started)

    def _close_open_calls(self) -> None:
        """At the end of the session: record every still-open call with its snapshot."""
        with _ORPHAN_LOCK:
            pending = list(self._open_call_list)
        for opened in pending:
            self.close_call(opened, opened.snapshot())

    @property
    def scope_open(self) -> bool:
        """True when the current context is inside a call this session records (its call event written,
        its result not yet) or a scope pushed with :meth:`push_scope`; False at the run's root."""
        return self._parent() != self._root_id

    def push_scope(self, event_id: str) -> None:
        """Make ``event_id`` the parent of the events recorded next in this context."""
        _scope.set((self, event_id, _scope.get()))

    def pop_scope(self) -> None:
        """Undo :meth:`push_scope`. Raises RuntimeError when only the root (run_start) is left."""
        node = _scope.get()
        if node is None or node[0] is not self:
            raise RuntimeError("pop_scope() without a matching push_scope(): the run_start scope stays")
        _scope.set(node[2])

    @contextmanager
    def llm_call(
        self, *, model: str, input: Any, provider: str | None = None, replay_policy: str = "frozen"
    ) -> Iterator[LLMCallHandle]:
        """Record an LLM call made by hand: ``with session.llm_call(model=m, input=x) as h: h.set_output(y)``.

        Writes ``llm_request`` on entry, ``llm_response`` (with the handle's tokens and cost) on exit, or an
        error event when the block raises (re-raised). Records only; never substitutes during replay.
        """
        log = self._require_log()
        if log is None:
            yield LLMCallHandle(None, model)
            return
        replay_policy = _check_policy(replay_policy)
        call = BoundaryCall(
            kind="llm",
            name=model,
            input=self._jsonable(input),
            provider=provider,
            model=model,
            replay_policy=replay_policy,
        )
        call_id, token, started = self._begin(call, orphan=False)
        handle = LLMCallHandle(call_id, model)
        try:
            yield handle
        except BaseException as exc:
            self._settle_failure(call, call_id, exc, started)
            raise
        finally:
            _scope.reset(token)
        result = LLMOutput(
            handle.output,
            prompt_tokens=handle.prompt_tokens,
            completion_tokens=handle.completion_tokens,
            total_tokens=handle.total_tokens,
            cost_usd=handle.cost_usd,
        )
        self._settle(
            BoundaryCall(
                kind="llm", name=handle.model, input=None, model=handle.model, replay_policy=replay_policy
            ),
            call_id,
            result,
            started,
        )
