"""The inspection view of a trace: summary fields and timeline rows, sanitized (spec "inspect").

Pure presentation: labels per event type and the sanitized type-specific payload of each event. The JSON
shape follows the reference TraceInspection (interop/REFERENCE-NOTES.md section 8): summary fields plus a
``timeline`` of ``{id, step, type, label, status, parent_id, duration_ms, details}``.
"""

from __future__ import annotations

from typing import Any

from stepfork.cli.output import sanitize, sanitize_text
from stepfork.trace.http_calls import is_http_call
from stepfork.trace.models import COMMON_EVENT_FIELDS


def event_label(event: Any) -> str:
    """The Name/Model column: tool name, LLM model, error type, state key, run status or the type."""
    kind = str(event.type)
    if kind in ("tool_call", "tool_result"):
        return sanitize_text(event.name)
    if kind == "llm_request":
        label = f"{event.provider}/{event.model}" if event.provider else event.model
        return sanitize_text(label)
    if kind == "llm_response":
        return sanitize_text(event.model or "-")
    if kind == "error":
        return sanitize_text(event.error_type)
    if kind == "state_change":
        return sanitize_text(event.key or "-")
    if kind == "run_end":
        return str(event.run_status)
    return kind


# Type-specific fields already shown in the Name/Model column.
LABEL_FIELDS = ("name", "model", "provider", "run_status", "error_type", "key")
# Optional usage fields, shown only when recorded.
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens", "cost_usd")


def event_details(event: Any) -> dict[str, Any]:
    """The event's payload (input, output, before/after, message, details, recorded usage) as sanitized
    JSON: the type-specific fields minus those in the label and unrecorded usage fields."""
    data = sanitize(event.model_dump(mode="json"))
    return {
        key: value
        for key, value in data.items()
        if key not in COMMON_EVENT_FIELDS
        and key not in LABEL_FIELDS
        and not (key in USAGE_FIELDS and value is None)
    }


def timeline_row(event: Any, *, label: str | None = None) -> dict[str, Any]:
    """One timeline entry: ``{id, step, type, label, status, parent_id, duration_ms, details}``;
    ``label`` overrides :func:`event_label` (an ``llm_response`` takes its request's label)."""
    return {
        "id": event.id,
        "step": event.step,
        "type": str(event.type),
        "label": event_label(event) if label is None else label,
        "status": str(event.status),
        "parent_id": event.parent_id,
        "duration_ms": event.duration_ms,
        "details": event_details(event),
    }


def summary(trace: Any, integrity: str) -> dict[str, Any]:
    """The summary fields of ``trace`` (sanitized), with the integrity state given by the caller."""
    from stepfork.trace.models import format_timestamp

    events = trace.events
    failure = None
    if trace.failure is not None:
        failure = sanitize(trace.failure.model_dump(mode="json"))
    return {
        "agent_name": sanitize_text(trace.agent_name),
        "run_id": trace.run_id,
        "status": str(trace.status),
        "events": len(events),
        "schema_version": "0.1",
        "created_at": format_timestamp(trace.created_at),
        "ended_at": format_timestamp(events[-1].timestamp) if events else None,
        "tool_calls": sum(1 for e in events if str(e.type) == "tool_call"),
        "http_requests": sum(1 for e in events if str(e.type) == "tool_call" and is_http_call(e.name)),
        "llm_calls": sum(1 for e in events if str(e.type) == "llm_request"),
        "duration_ms": trace.totals.duration_ms,
        "cost_usd": trace.totals.cost_usd,
        "integrity": integrity,
        "failure": failure,
    }
