"""RecordingSession's explicit recording methods (REFERENCE-API.md ``stepfork.recorder``, issue 14).

For programs that cannot use the decorators: a custom agent loop, or another language's events forwarded
to Python. Each method writes one event (redacted, hashed, flushed like every other) under the current
scope (``push_scope``/``pop_scope``) and returns it as the event model (``ToolCall``, ``ToolResult``...), as
the reference did; ``None`` when the session is inert (inside a replay). They record only: nothing is
substituted during replay, unlike ``trace_tool`` and ``llm_request``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepfork.trace.callrecording import CallRecorder
from stepfork.trace.instrument import _check_policy

if TYPE_CHECKING:
    from stepfork.trace.models import ErrorEvent, EventBase, LLMRequest, LLMResponse, ToolCall, ToolResult


def _model(emitted: tuple[str, int, dict[str, Any]]) -> Any:
    from stepfork.trace.models import EVENT_ADAPTER

    _, step, event = emitted
    return EVENT_ADAPTER.validate_python({**event, "step": step})


def _value(member: Any) -> str:
    return str(getattr(member, "value", member))


class ExplicitRecording(CallRecorder):
    """The ``record_*`` methods and ``to_json`` of :class:`~stepfork.trace.recording.RecordingSession`.

    Raises (every method): RuntimeError after the session finished; TraceSerializationError for a value
    with no JSON form; ValueError for an unknown replay policy.
    """

    def to_json(self, value: Any) -> Any:
        """``value`` converted to JSON as this session records it (``to_jsonable`` with its serializer)."""
        return self._jsonable(value)

    def record_tool_call(self, *, name: str, input: Any, replay_policy: str = "frozen") -> ToolCall | None:
        """Record a ``tool_call`` under the current scope; return it (pass it to ``record_tool_result``)."""
        log = self._require_log()
        if log is None:
            return None
        policy = _check_policy(replay_policy)
        fields = {"name": name, "input": self._jsonable(input)}
        return _model(log.emit("tool_call", fields, parent_id=self._parent(), replay_policy=policy))  # type: ignore[no-any-return]

    def record_tool_result(self, call: ToolCall, output: Any, *, status: str = "ok") -> ToolResult | None:
        """Record the ``tool_result`` of ``call`` (its child) with ``output`` and ``status``; return it."""
        log = self._require_log()
        if log is None:
            return None
        fields = {"name": call.name, "output": self._jsonable(output)}
        emitted = log.emit(
            "tool_result",
            fields,
            parent_id=call.id,
            status=_value(status),
            replay_policy=_value(call.replay_policy),
        )
        return _model(emitted)  # type: ignore[no-any-return]

    def record_tool_failure(self, call: ToolCall, exc: BaseException) -> ToolResult | None:
        """Record that ``call`` raised ``exc``: a ``tool_result`` with status error and output
        ``{"error_type", "message"}``, and an ``error`` event under it (the decorator's shape); return
        the result."""
        log = self._require_log()
        if log is None:
            return None
        from stepfork.trace.eventlog import exception_message, qualified_type_name

        output = {"error_type": qualified_type_name(exc), "message": exception_message(exc)}
        emitted = log.emit(
            "tool_result",
            {"name": call.name, "output": output},
            parent_id=call.id,
            status="error",
            replay_policy=_value(call.replay_policy),
            flush=False,
        )
        self._emit_error(exc, parent_id=emitted[0])
        return _model(emitted)  # type: ignore[no-any-return]

    def record_llm_request(
        self, *, model: str, input: Any, provider: str | None = None, replay_policy: str = "frozen"
    ) -> LLMRequest | None:
        """Record an ``llm_request`` under the current scope; return it."""
        log = self._require_log()
        if log is None:
            return None
        policy = _check_policy(replay_policy)
        fields = {"provider": provider, "model": model, "input": self._jsonable(input)}
        return _model(log.emit("llm_request", fields, parent_id=self._parent(), replay_policy=policy))  # type: ignore[no-any-return]

    def record_llm_response(
        self,
        request: LLMRequest,
        output: Any,
        *,
        model: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        total_tokens: int | None = None,
        cost_usd: float | None = None,
    ) -> LLMResponse | None:
        """Record the ``llm_response`` of ``request`` (model defaults to the request's); return it."""
        log = self._require_log()
        if log is None:
            return None
        fields = {
            "model": model or request.model,
            "output": self._jsonable(output),
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": total_tokens,
            "cost_usd": cost_usd,
        }
        emitted = log.emit(
            "llm_response", fields, parent_id=request.id, replay_policy=_value(request.replay_policy)
        )
        return _model(emitted)  # type: ignore[no-any-return]

    def record_llm_failure(self, request: LLMRequest, exc: BaseException) -> ErrorEvent | None:
        """Record that ``request`` failed with ``exc``: an ``error`` event under it; return it."""
        if self._require_log() is None:
            return None
        return _model(self._emit_error(exc, parent_id=request.id))  # type: ignore[no-any-return]

    def event_model(self, emitted: tuple[str, int, dict[str, Any]]) -> EventBase:
        """The event model of what ``EventLog.emit`` returned (for subclasses)."""
        return _model(emitted)  # type: ignore[no-any-return]
