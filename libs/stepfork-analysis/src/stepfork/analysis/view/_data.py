"""What a view embeds: redacted event items streamed from a bundle, the run summary, JSON Pointers.

Every value is redacted with the bundle's own rules (``stepfork.trace.redaction.redact_json``) before it
is embedded, like every other output (DESIGN.md, "Errors and output").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stepfork.analysis.view._page import embed_json
from stepfork.trace.models import format_timestamp
from stepfork.trace.redaction import redact_json

__all__ = ["SummaryBuilder", "event_items", "path_to_pointer", "redacted"]

_DROPPED = ("run_id",)  # the same in every event of a bundle: shown once in the summary


def redacted(value: Any) -> Any:
    """``value`` (JSON) with secrets replaced by ``[REDACTED]``."""
    return redact_json(value).value


@dataclass
class SummaryBuilder:
    """The run summary, accumulated one event at a time while the events stream into the page.

    ``result()`` returns ``{agent_name, run_id, status, created_at, ended_at, duration_ms, events,
    tool_calls, llm_calls, errors, prompt_tokens, completion_tokens, total_tokens, cost_usd, integrity,
    failure}``; durations in ms, cost in USD (the recorded ``cost_usd`` summed, or the manifest's total).
    """

    manifest: Any
    integrity: str | None = None
    events: int = 0
    tool_calls: int = 0
    llm_calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None
    first: datetime | None = None
    last: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, event: Any) -> None:
        """Count ``event`` (a pydantic event of the bundle)."""
        self.events += 1
        kind = str(event.type)
        self.tool_calls += kind == "tool_call"
        self.llm_calls += kind == "llm_request"
        self.errors += str(event.status) == "error"
        if kind == "llm_response":
            prompt, completion = event.prompt_tokens or 0, event.completion_tokens or 0
            self.prompt_tokens += prompt
            self.completion_tokens += completion
            self.total_tokens += event.total_tokens if event.total_tokens is not None else prompt + completion
            if event.cost_usd is not None:
                self.cost_usd = (self.cost_usd or 0.0) + event.cost_usd
        stamp = event.timestamp
        if self.first is None or stamp < self.first:
            self.first = stamp
        if self.last is None or stamp > self.last:
            self.last = stamp

    def result(self) -> dict[str, Any]:
        """The summary dict (redacted); see the class docstring."""
        manifest = self.manifest
        totals = manifest.totals
        duration = totals.duration_ms
        if duration is None and self.first is not None and self.last is not None:
            duration = int((self.last - self.first).total_seconds() * 1000)
        failure = manifest.failure.model_dump(mode="json") if manifest.failure is not None else None
        out = {
            "agent_name": manifest.agent_name,
            "run_id": manifest.run_id,
            "status": str(manifest.status),
            "created_at": format_timestamp(manifest.created_at),
            "ended_at": format_timestamp(self.last) if self.last is not None else None,
            "duration_ms": duration,
            "events": self.events,
            "tool_calls": self.tool_calls,
            "llm_calls": self.llm_calls,
            "errors": self.errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd if self.cost_usd is not None else totals.cost_usd,
            "integrity": self.integrity,
            "failure": failure,
            **self.extra,
        }
        return redacted(out)  # type: ignore[no-any-return]


def event_items(events: Iterable[Any], summary: SummaryBuilder, origin: datetime) -> Iterator[bytes]:
    """Each event of ``events`` as embedded JSON bytes (its fields, redacted, without ``run_id``, plus
    ``t``: microseconds since ``origin``), counted into ``summary`` on the way. Holds one event at a time.
    """
    for event in events:
        summary.add(event)
        data = event.model_dump(mode="json")
        for name in _DROPPED:
            data.pop(name, None)
        data = redacted(data)
        data["t"] = int((event.timestamp - origin).total_seconds() * 1_000_000)
        yield embed_json(data)


_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def path_to_pointer(path: str | None) -> str | None:
    """The JSON Pointer (RFC 6901) of a dotted path: ``output.items[2].id`` -> ``/output/items/2/id``,
    ``$.a.b`` -> ``/a/b``, ``$`` -> ``""``; None for None. A key holding ``.`` or ``[`` cannot be told
    apart in the dotted form; it is split where it shows one (the dotted paths come from the diff and the
    replay diagnostic, which write keys as they are)."""
    if path is None:
        return None
    text = path[1:] if path.startswith("$") else "." + path if path and path[0] != "[" else path
    tokens: list[str] = []
    for match in _STEP.finditer(text):
        token = match.group(1) if match.group(1) is not None else match.group(2)
        tokens.append(token.replace("~", "~0").replace("/", "~1"))
    return "".join("/" + t for t in tokens)
