"""The run summary of a bundle, accumulated one event at a time: the one implementation behind
``stepfork inspect``'s summary, the HTML view's summary and ``runs_df`` (memory: the counters, never the
events; a bundle of any size is summarized while it streams).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stepfork.trace.http_calls import is_http_call
from stepfork.trace.models import format_timestamp
from stepfork.trace.redaction import redact_json

__all__ = ["SummaryBuilder"]


@dataclass
class SummaryBuilder:
    """The run summary, accumulated one event at a time (:meth:`add`) while the events stream.

    Counters: ``events``, ``tool_calls`` (tool_call events, as the manifest's totals count them),
    ``http_requests`` (those of them that are ``http`` calls: requests outside the agent's order, issue 29,
    :mod:`stepfork.trace.http_calls`), ``llm_calls`` (llm_request events), ``llm_responses``,
    ``errors`` (events with status ``error``), ``prompt_tokens``, ``completion_tokens``, ``total_tokens``
    (a response's ``total_tokens``, else its prompt + completion), ``cost_usd`` (the LLM calls' recorded
    ``cost_usd`` summed, USD; None when none recorded one), ``llm_latency_ms`` (the LLM responses' recorded
    ``duration_ms`` summed; None when none recorded one), ``tokens_recorded`` (some response recorded a
    token count), ``first`` and ``last`` (the earliest and latest event timestamps).

    ``result()`` returns ``{agent_name, run_id, status, created_at, ended_at, duration_ms, events,
    tool_calls, http_requests, llm_calls, errors, prompt_tokens, completion_tokens, total_tokens, cost_usd,
    llm_latency_ms, integrity, failure}`` (redacted); durations in ms, cost in USD (the recorded
    ``cost_usd`` summed, or the manifest's total).
    """

    manifest: Any
    integrity: str | None = None
    events: int = 0
    tool_calls: int = 0
    http_requests: int = 0
    llm_calls: int = 0
    llm_responses: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    tokens_recorded: bool = False
    cost_usd: float | None = None
    llm_latency_ms: int | None = None
    first: datetime | None = None
    last: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, event: Any) -> None:
        """Count ``event`` (a pydantic event of the bundle)."""
        self.events += 1
        kind = str(event.type)
        if kind == "tool_call":
            self.tool_calls += 1
            self.http_requests += is_http_call(event.name)
        self.llm_calls += kind == "llm_request"
        self.errors += str(event.status) == "error"
        if kind == "llm_response":
            self.llm_responses += 1
            prompt, completion, total = event.prompt_tokens, event.completion_tokens, event.total_tokens
            self.tokens_recorded |= prompt is not None or completion is not None or total is not None
            self.prompt_tokens += prompt or 0
            self.completion_tokens += completion or 0
            self.total_tokens += total if total is not None else (prompt or 0) + (completion or 0)
            if event.cost_usd is not None:
                self.cost_usd = (self.cost_usd or 0.0) + event.cost_usd
            if event.duration_ms is not None:
                self.llm_latency_ms = (self.llm_latency_ms or 0) + event.duration_ms
        stamp = event.timestamp
        if self.first is None or stamp < self.first:
            self.first = stamp
        if self.last is None or stamp > self.last:
            self.last = stamp

    def duration_ms(self) -> int | None:
        """The run's duration in ms: the manifest's ``totals.duration_ms`` when recorded, else the span from
        the first to the last event timestamp (an imported bundle records none), else None (no events)."""
        duration = self.manifest.totals.duration_ms
        if duration is None and self.first is not None and self.last is not None:
            duration = int((self.last - self.first).total_seconds() * 1000)
        return duration  # type: ignore[no-any-return]

    def result(self) -> dict[str, Any]:
        """The summary dict (redacted); see the class docstring."""
        manifest = self.manifest
        failure = manifest.failure.model_dump(mode="json") if manifest.failure is not None else None
        out = {
            "agent_name": manifest.agent_name,
            "run_id": manifest.run_id,
            "status": str(manifest.status),
            "created_at": format_timestamp(manifest.created_at),
            "ended_at": format_timestamp(self.last) if self.last is not None else None,
            "duration_ms": self.duration_ms(),
            "events": self.events,
            "tool_calls": self.tool_calls,
            "http_requests": self.http_requests,
            "llm_calls": self.llm_calls,
            "errors": self.errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd if self.cost_usd is not None else manifest.totals.cost_usd,
            "llm_latency_ms": self.llm_latency_ms,
            "integrity": self.integrity,
            "failure": failure,
            **self.extra,
        }
        return redact_json(out).value  # type: ignore[no-any-return]
