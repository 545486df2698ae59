"""The timeline rows of an inspection: one sanitized row per event (spec "inspect"; issue 32).

Pure presentation of one event: its label (the Name/Model column) and its type-specific payload, redacted
with the same rules as the bundle (interop notes section 3) and with terminal controls escaped (issue 7).
A row is ``{id, step, type, label, status, parent_id, duration_ms, details}``, the reference's
``EventSummary`` (interop/REFERENCE-NOTES.md section 8).
"""

from __future__ import annotations

from typing import Any

from stepfork.analysis._shared.render import escape_controls
from stepfork.trace.models import COMMON_EVENT_FIELDS
from stepfork.trace.redaction import redact_json

__all__ = [
    "LABEL_FIELDS",
    "USAGE_FIELDS",
    "event_details",
    "event_label",
    "sanitized",
    "sanitized_text",
    "timeline_row",
]

LABEL_FIELDS = ("name", "model", "provider", "run_status", "error_type", "key")
"""Type-specific fields already shown in the label, so left out of ``details``."""

USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens", "cost_usd")
"""Optional usage fields, in ``details`` only when recorded."""


def sanitized(value: Any) -> Any:
    """The redacted copy of a JSON value (the bundle's own redaction rules)."""
    return redact_json(value).value


def sanitized_text(text: str) -> str:
    """``text`` redacted (credential patterns become ``[REDACTED]``) with terminal controls escaped."""
    redacted = sanitized(text)
    return escape_controls(redacted) if isinstance(redacted, str) else "[REDACTED]"


def event_label(event: Any) -> str:
    """The Name/Model column of ``event`` (a pydantic event of the bundle): the tool name, the LLM's
    ``provider/model`` (its model alone without a provider), the response's model, the error type, the state
    key, the run status, or the event type; sanitized."""
    kind = str(event.type)
    if kind in ("tool_call", "tool_result"):
        return sanitized_text(event.name)
    if kind == "llm_request":
        return sanitized_text(f"{event.provider}/{event.model}" if event.provider else event.model)
    if kind == "llm_response":
        return sanitized_text(event.model or "-")
    if kind == "error":
        return sanitized_text(event.error_type)
    if kind == "state_change":
        return sanitized_text(event.key or "-")
    if kind == "run_end":
        return str(event.run_status)
    return kind


def event_details(event: Any) -> dict[str, Any]:
    """The event's payload (input, output, before/after, message, details, recorded usage) as sanitized
    JSON: the type-specific fields minus those in the label and the usage fields left unrecorded."""
    data = sanitized(event.model_dump(mode="json"))
    return {
        key: value
        for key, value in data.items()
        if key not in COMMON_EVENT_FIELDS
        and key not in LABEL_FIELDS
        and not (key in USAGE_FIELDS and value is None)
    }


def timeline_row(event: Any, *, label: str | None = None) -> dict[str, Any]:
    """One timeline row: ``{id, step, type, label, status, parent_id, duration_ms, details}``; ``label``
    overrides :func:`event_label` (an ``llm_response`` takes its request's label)."""
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
