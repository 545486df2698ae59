"""One trace's spans -> a Stepfork ``Trace`` (schema 0.1 events) plus the ``otel-import.json`` extension.

The run is the trace's root span (the parentless span that starts first; an OpenInference AGENT/CHAIN
or a GenAI ``invoke_agent`` span is preferred when several are parentless): it gives ``run_start``/
``run_end``, the run's input and output, the status and the failure (span status ERROR, its
``exception`` event). Every LLM and tool span becomes a call: its request event at the span's start, its
result at the span's end, events ordered by time; ``parent_id`` is the event of the nearest ancestor span
that is a call, else ``run_start``. docs/import.md has the tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stepfork.analysis.otlp import conventions as conv
from stepfork.analysis.otlp import exact, flattened
from stepfork.analysis.otlp.concurrency import CallSpan, PathSpan, span_facts, superstep_task
from stepfork.analysis.otlp.decode import Span
from stepfork.trace.bundle import Trace
from stepfork.trace.models import (
    ErrorEvent,
    EventStatus,
    FailureInfo,
    LLMRequest,
    LLMResponse,
    RunEnd,
    RunStart,
    RunStatus,
    ToolCall,
    ToolResult,
)

STATUS_ERROR = 2
_LLM_READERS = {
    "openinference": conv.openinference_llm,
    "genai": conv.genai_llm,
    "stepfork": exact.stepfork_llm,
}


@dataclass
class _Call:
    span: Span
    role: str  # "llm" | "tool"
    convention: str
    request_id: str = ""
    ended: bool = True  # False: the bundle holds no outcome of the call


def _end_ns(call: _Call) -> int | None:
    """When the call's span ended (never before it started), None when the bundle holds no outcome."""
    return max(call.span.end_ns, call.span.start_ns) if call.ended else None


def _path(span: Span, by_id: dict[str, Span]) -> tuple[PathSpan, ...]:
    """``(span_id, start_ns, end_ns, task)`` of ``span``'s ancestors from the root down to ``span`` itself
    (``task``: :func:`superstep_task` of the span's attributes)."""
    chain: list[PathSpan] = []
    seen: set[str] = set()
    current: Span | None = span
    while current is not None and current.span_id not in seen:  # a malformed parent cycle ends the walk
        seen.add(current.span_id)
        end = max(current.end_ns, current.start_ns)
        chain.append((current.span_id, current.start_ns, end, superstep_task(current.attributes)))
        current = by_id.get(current.parent_id or "")
    return tuple(reversed(chain))


def _time(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1_000_000_000, tz=UTC) if ns > 0 else datetime.fromtimestamp(0, tz=UTC)


def _failure(span: Span) -> tuple[str, str]:
    """The ``(type, message)`` of a failed span: its ``exception`` event, else the status message."""
    for event in span.events:
        if event.name == "exception":
            kind = str(event.attributes.get("exception.type") or "Error")
            message = str(event.attributes.get("exception.message") or span.status_message or kind)
            return kind, message
    return "SpanError", span.status_message or f"span {span.name!r} ended with status ERROR"


def _error_event(
    event_id: str, run_id: str, parent_id: str | None, step: int, timestamp: Any, kind: str, message: str
) -> ErrorEvent:
    """The ``error`` event of a failed span (``details.chain`` holds the one failure, as the recorder's)."""
    return ErrorEvent(
        id=event_id,
        run_id=run_id,
        parent_id=parent_id,
        step=step,
        timestamp=timestamp,
        error_type=kind,
        message=message,
        details={"chain": [{"type": kind, "message": message}]},
    )


def _detect(span: Span, convention: str) -> str | None:
    found = conv.convention_of(span)
    if found is None:
        return None
    return found if convention in ("auto", found) or found == "stepfork" else None


def _root(spans: list[Span], convention: str) -> Span:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in ids] or spans
    roots.sort(key=lambda s: s.start_ns)
    for span in roots:
        found = _detect(span, convention)
        if found is not None and conv.role_of(span, found) == "agent":
            return span
    return roots[0]


def build_trace(
    spans: list[Span], *, convention: str = "auto", agent_name: str | None = None
) -> tuple[Trace, dict[str, Any], dict[str, Any]]:
    """Build the ``Trace`` of one trace's ``spans``, its ``otel-import.json`` data and its concurrency
    facts (``concurrency.json``, from the span times: :mod:`stepfork.analysis.otlp.concurrency`).

    Args:
        spans: the spans of one trace (any order).
        convention: ``"auto"`` (each span read under the convention its attributes show), ``"genai"`` or
            ``"openinference"`` (spans of the other convention are ignored).
        agent_name: the bundle's agent name (default: the resource's ``service.name``, else ``otel-import``).

    Returns:
        ``(trace, extension, facts)``; ``extension`` is the JSON of ``otel-import.json``
        (stepfork.replay.imported), ``facts`` the JSON of ``concurrency.json`` (stepfork.trace.concurrency).
    """
    trace_id = spans[0].trace_id
    root = _root(spans, convention)
    by_id = {s.span_id: s for s in spans}
    calls: list[_Call] = []
    for span in spans:
        found = _detect(span, convention)
        role = conv.role_of(span, found) if found is not None else None
        if role in ("llm", "tool"):  # a root LLM span (no agent span around it) is the run and its call
            assert found is not None
            calls.append(_Call(span, role, found))
    call_of = {c.span.span_id: c for c in calls}
    model_tool_calls = flattened.tool_calls_by_id([c.span for c in calls if c.role == "llm"])
    conventions_seen = sorted({c.convention for c in calls}) or [_detect(root, convention) or "genai"]

    counter = 0
    prefix = hashlib.sha256(trace_id.encode()).hexdigest()[:16]

    def new_id() -> str:
        nonlocal counter
        counter += 1
        return f"evt_{prefix}{counter:016x}"

    run_id = f"run_{trace_id}"
    root_id = new_id()
    run_input, run_output = conv.run_io(root, _detect(root, convention))
    if root.span_id in call_of:  # no run span: the root is a call, whose input/output are not the run's
        run_input = run_output = None
    # (time, order, seq): a span's start before its end; at one instant, ends before starts
    timeline: list[tuple[int, int, int, str, _Call]] = []
    for seq, item in enumerate(sorted(calls, key=lambda c: (c.span.start_ns, c.span.end_ns))):
        start, end = item.span.start_ns, max(item.span.end_ns, item.span.start_ns)
        timeline.append((start, 1, seq, "start", item))
        timeline.append((end, 0 if end > start else 2, seq, "end", item))
    timeline.sort(key=lambda item: item[:3])

    def parent_of(span: Span) -> str:
        parent = by_id.get(span.parent_id or "")
        while parent is not None:
            call = call_of.get(parent.span_id)
            if call is not None and call.request_id:
                return call.request_id
            parent = by_id.get(parent.parent_id or "")
        return root_id

    events: list[Any] = [RunStart(id=root_id, run_id=run_id, timestamp=_time(root.start_ns), input=run_input)]
    extension_calls: dict[str, Any] = {}
    parent_ids: dict[str, str] = {}  # call event id -> its parent event id

    def add(kind: Callable[..., Any], call: _Call, edge: str, step: int, **fields: Any) -> str:
        """Append the ``kind`` event of ``call``'s span at ``edge``; return its id. ``"start"``: the call's
        request (it becomes ``call.request_id``), under the nearest enclosing call or the run, at the span's
        start. ``"end"``: its outcome, under the request, at the span's end, with ``duration_ms``."""
        span = call.span
        event_id = new_id()
        if edge == "start":
            call.request_id = event_id
            parent, at = parent_ids.setdefault(event_id, parent_of(span)), span.start_ns
        else:
            parent, at = call.request_id, span.end_ns
            fields["duration_ms"] = max(0, (span.end_ns - span.start_ns) // 1_000_000)
        fields.update(id=event_id, run_id=run_id, parent_id=parent, step=step, timestamp=_time(at))
        events.append(kind(**fields))
        return event_id

    for _, _, _, edge, call in timeline:
        span = call.span
        step = len(events)
        failed = span.status_code == STATUS_ERROR
        if call.role == "llm":
            llm = _LLM_READERS[call.convention](span)
            if edge == "start":
                request_id = add(
                    LLMRequest,
                    call,
                    edge,
                    step,
                    provider=llm.provider or None,
                    model=llm.model,
                    input=llm.input,
                )
                info: dict[str, Any] = {"span_id": span.span_id, "content_captured": llm.content_captured}
                if llm.fields is not None:
                    info["fields"] = llm.fields
                if llm.normalize:
                    info["normalize"] = llm.normalize
                extension_calls[request_id] = info
                continue
            if llm.missing and not failed:
                call.ended = False
                continue
            if failed and llm.output is None:
                kind, message = _failure(span)
                events.append(
                    _error_event(new_id(), run_id, call.request_id, step, _time(span.end_ns), kind, message)
                )
                continue
            captured = llm.output is not None or call.convention == "stepfork"
            add(
                LLMResponse,
                call,
                edge,
                step,
                model=llm.model,
                output=llm.output if captured else {"content_captured": False},
                prompt_tokens=llm.usage.get("prompt_tokens"),
                completion_tokens=llm.usage.get("completion_tokens"),
                total_tokens=llm.usage.get("total_tokens"),
            )
            continue
        tool = (
            exact.stepfork_tool(span)
            if call.convention == "stepfork"
            else conv.tool_call(span, call.convention, model_tool_calls)
        )
        if edge == "start":
            request_id = add(ToolCall, call, edge, step, name=tool.name, input=tool.input)
            if not tool.content_captured:
                extension_calls[request_id] = {"span_id": span.span_id, "content_captured": False}
            continue
        if tool.missing and not failed:
            call.ended = False
            continue
        if failed:
            kind, message = _failure(span)
            exported = tool.output if call.convention == "stepfork" and not tool.missing else None
            output = exported if exported is not None else {"error_type": kind, "message": message}
            result_id = add(
                ToolResult, call, edge, step, status=EventStatus.ERROR, name=tool.name, output=output
            )
            events.append(
                _error_event(new_id(), run_id, result_id, step + 1, _time(span.end_ns), kind, message)
            )
            continue
        add(ToolResult, call, edge, step, name=tool.name, output=tool.output)

    failure = None
    status = RunStatus.COMPLETED
    end_time = _time(max(root.end_ns, root.start_ns))
    exported_status = root.attributes.get("stepfork.run_status")  # a run Stepfork exported
    end_status = root.attributes.get("stepfork.run_end_status")
    if root.status_code == STATUS_ERROR and root.attributes.get("stepfork.run_error") is False:
        # a run Stepfork exported whose failure is a call's error event: no run-level error event
        kind, message = _failure(root)
        step_attr = root.attributes.get("stepfork.failure_step")
        failure = FailureInfo(type=kind, message=message, step=step_attr if isinstance(step_attr, int) else 0)
        status = RunStatus.FAILED
    elif root.status_code == STATUS_ERROR and exported_status in (None, "failed"):
        kind, message = _failure(root)
        error_step = len(events)
        events.append(_error_event(new_id(), run_id, root_id, error_step, end_time, kind, message))
        failure = FailureInfo(type=kind, message=message, step=error_step)
        status = RunStatus.FAILED
        if exported_status is None:  # the exported run keeps its recorded run_end output
            run_output = None
    if exported_status in ("running", "completed") and failure is None:
        status = RunStatus(exported_status)
    if end_status != "":  # "": the exported run had no run_end event
        events.append(
            RunEnd(
                id=new_id(),
                run_id=run_id,
                parent_id=root_id,
                step=len(events),
                timestamp=end_time,
                run_status=RunStatus(end_status) if end_status else status,
                output=run_output,
            )
        )
    if root.attributes.get("stepfork.run_start") is False:  # the exported run had no run_start event
        events = [e for e in events if e.id != root_id]
    if "stepfork.run_id" in root.attributes:  # a run Stepfork exported keeps its id and name
        run_id = str(root.attributes["stepfork.run_id"])
        events = [e.model_copy(update={"run_id": run_id}) for e in events]
    exported_name = root.attributes.get("stepfork.agent_name")
    name = agent_name or str(exported_name or root.resource.get("service.name") or "") or "otel-import"
    if name == "unknown_service" or name.startswith("unknown_service:"):
        name = "otel-import"
    trace = Trace(
        run_id=run_id,
        agent_name=name,
        created_at=_time(root.start_ns),
        status=status,
        failure=failure,
        events=events,
    )
    extension = {
        "schema": 1,
        "trace_id": trace_id,
        "root_span_id": root.span_id,
        "convention": conventions_seen[0] if len(conventions_seen) == 1 else "mixed",
        "calls": extension_calls,
    }
    call_spans = [
        CallSpan(c.request_id, parent, c.span.start_ns, _end_ns(c), _path(c.span, by_id))
        for c in calls
        if (parent := parent_ids.get(c.request_id)) is not None
    ]
    facts = span_facts(root_id, min(s.start_ns for s in spans), call_spans)
    return trace, extension, facts
