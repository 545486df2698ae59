"""The inspection model: what ``stepfork inspect`` shows of a bundle, as pydantic models (issue 32).

``TraceInspection`` holds the run summary and the event timeline; ``EventSummary`` one timeline row. They
keep the earlier implementation's fields and names (``agent_name``, ``events``, ``timeline``, ``integrity``;
interop/REFERENCE-NOTES.md section 8) and add Stepfork's (``ended_at``, ``http_requests``, ``tokens``,
``llm_cost_usd``, ``llm_latency_ms``...). ``model_dump_json()`` is the JSON a notebook or a script keeps;
keys that only some bundles have (``torn_line``, ``incomplete``, ``imported``, a row's
``content_captured``) are left out when absent, as ``stepfork inspect --json`` leaves them out.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

__all__ = ["EventSummary", "TraceInspection"]


def _without_absent(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    for key in keys:
        if data.get(key) is None:
            data.pop(key, None)
    return data


class EventSummary(BaseModel):
    """One timeline row: an event of the bundle, sanitized.

    Attributes:
        id, step, type, status, parent_id, duration_ms: the event's own (``duration_ms`` in ms, or None).
        label: the Name/Model column (tool name, ``provider/model``, error type, state key, run status).
        details: the event's type-specific payload as redacted JSON (input, output, message...).
        content_captured: False for a call imported from OpenTelemetry without its content (replay cannot
            serve it); None (left out of the dump) otherwise.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    step: int
    type: str
    label: str
    status: str
    parent_id: str | None = None
    duration_ms: int | None = None
    details: dict[str, Any]
    content_captured: bool | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_absent(handler(self), ("content_captured",))


class TraceInspection(BaseModel):
    """A bundle's run summary and its event timeline, sanitized (secrets as ``[REDACTED]``).

    Attributes:
        path: the bundle inspected (None for an in-memory trace).
        agent_name, run_id, status, schema_version, created_at: the manifest's (timestamps ISO 8601, UTC).
        ended_at: the last event's timestamp, or None (no event).
        events, tool_calls, llm_calls: counts of the events read (``tool_calls`` counts ``tool_call``
            events, ``http_requests`` those among them that are requests outside the agent's order).
        duration_ms: the manifest's duration, else the span of the event timestamps (ms), or None.
        cost_usd: the manifest's total cost (USD) or None; ``llm_cost_usd`` the LLM calls' recorded cost
            summed; ``llm_latency_ms`` their recorded durations summed; ``tokens`` ``{prompt, completion,
            total}`` when some response recorded a token count, else None.
        integrity: ``verified``, ``mismatch`` or ``unverified_legacy`` (``IntegrityStatus``), or
            ``not_checked`` for an in-memory trace.
        failure: the manifest's ``{type, message, step}`` of a failed run, redacted, or None.
        torn_line: with ``partial``, the events.jsonl line cut by a crash and not read; else absent.
        incomplete: ``{events, manifest_events}`` when a finished run's events.jsonl holds fewer events than
            its manifest counts; else absent.
        imported: for a bundle made by ``stepfork import``, ``{convention, ...counts}``; else absent.
        timeline: one :class:`EventSummary` per selected event, in order.
    """

    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    agent_name: str
    run_id: str
    status: str
    events: int
    schema_version: str = "0.1"
    created_at: str
    ended_at: str | None = None
    tool_calls: int
    http_requests: int = 0
    llm_calls: int
    duration_ms: int | None = None
    cost_usd: float | None = None
    tokens: dict[str, int] | None = None
    llm_cost_usd: float | None = None
    llm_latency_ms: int | None = None
    integrity: str
    failure: dict[str, Any] | None = None
    torn_line: int | None = None
    incomplete: dict[str, int] | None = None
    imported: dict[str, Any] | None = None
    timeline: list[EventSummary]

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_absent(handler(self), ("torn_line", "incomplete", "imported"))
