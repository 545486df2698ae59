"""One streamed pass over a bundle: the run summary and a bounded timeline (issue 13; library since issue 32).

events.jsonl is read one event at a time (:func:`stepfork.trace.reading.open_bundle`, ``EventStream``) and
each event is counted by :class:`.summary.SummaryBuilder` (the summary the HTML view
shows too), so memory holds the counts, the rows kept and one event, never the trace: a 10,000-call bundle
is inspected in bounded memory (benchmarks/bench_inspect.py; docs/performance.md, "inspect"). Only the rows
kept are built (a row redacts its event's payload again: the costly step).

The bounded timeline keeps the first :data:`HEAD_ROWS` and the last :data:`TAIL_ROWS` selected events and
the error events between them (up to :data:`ERROR_ROWS`); the rest is counted. ``keep="all"`` keeps every
selected row; ``keep="none"`` keeps none (a first pass that only counts).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from stepfork.analysis.inspection.rows import event_label, sanitized, sanitized_text, timeline_row
from stepfork.analysis.inspection.summary import SummaryBuilder

__all__ = ["ERROR_ROWS", "HEAD_ROWS", "TAIL_ROWS", "BundleScan", "ImportedView", "Keep", "scan_bundle"]

HEAD_ROWS = 10
TAIL_ROWS = 10
ERROR_ROWS = 20

Keep = Literal["bounded", "all", "none"]

Row = dict[str, Any]


@dataclass
class BundleScan:
    """What one pass found: the run summary (``summary()``, counted by ``counts``), the rows kept, and how
    many selected events were left out of a bounded timeline (``hidden``).

    Attributes:
        counts: the :class:`~.summary.SummaryBuilder` every event was added to (the
            one summary implementation, shared with the HTML view and ``runs_df``).
        integrity: the bundle's ``IntegrityStatus`` value (``verified``, ``mismatch``,
            ``unverified_legacy``), or ``not_checked`` (an in-memory trace).
        rows: ``(position, row)`` pairs in event order; ``position`` is the 0-based index among the
            selected events (a gap between two positions is where rows were left out).
        selected: how many events the ``step``/``errors_only`` filters selected.
        at_step: how many events are at ``step`` (all events when no step is given).
        torn_line: with ``partial``, the 1-based number of a final events.jsonl line cut by a crash and
            left out (not read, not repaired), else None.
        incomplete: ``{events, manifest_events}`` when a finished run's events.jsonl holds fewer events
            than its manifest counts (a bundle cut short; ``stepfork.trace.reading.counted_events``), else
            None.
    """

    counts: SummaryBuilder
    integrity: str
    selected: int = 0
    at_step: int = 0
    rows: list[tuple[int, Row]] = field(default_factory=list)
    torn_line: int | None = None
    incomplete: dict[str, int] | None = None

    @property
    def hidden(self) -> int:
        """Selected events not in :attr:`rows`."""
        return self.selected - len(self.rows)

    def summary(self) -> dict[str, Any]:
        """The summary fields of the inspection (sanitized; :class:`TraceInspection` without ``path``,
        ``imported`` and ``timeline``): the reference's fields plus the LLM usage: ``tokens`` ``{prompt,
        completion, total}``, ``llm_cost_usd`` (the sum recorded on the LLM calls) and ``llm_latency_ms``
        (the sum of their durations), each None when no LLM call recorded it. ``duration_ms`` is the
        manifest's, else the span of the events' timestamps (an imported bundle). ``torn_line`` and
        ``incomplete`` are present only when set."""
        from stepfork.trace.models import format_timestamp

        counts = self.counts
        manifest = counts.manifest
        failure = None
        if manifest.failure is not None:
            failure = sanitized(manifest.failure.model_dump(mode="json"))
        head: dict[str, Any] = {
            "agent_name": sanitized_text(manifest.agent_name),
            "run_id": manifest.run_id,
            "status": str(manifest.status),
            "events": counts.events,
            "schema_version": "0.1",
            "created_at": format_timestamp(manifest.created_at),
            "ended_at": format_timestamp(counts.last) if counts.last is not None else None,
            "tool_calls": counts.tool_calls,
            "http_requests": counts.http_requests,
            "llm_calls": counts.llm_calls,
            "duration_ms": counts.duration_ms(),
            "cost_usd": manifest.totals.cost_usd,
            "tokens": {
                "prompt": counts.prompt_tokens,
                "completion": counts.completion_tokens,
                "total": counts.total_tokens,
            }
            if counts.tokens_recorded
            else None,
            "llm_cost_usd": round(counts.cost_usd, 6) if counts.cost_usd is not None else None,
            "llm_latency_ms": counts.llm_latency_ms,
            "integrity": self.integrity,
            "failure": failure,
        }
        if self.torn_line is not None:  # only on a crashed run read with --partial (the view's key)
            head["torn_line"] = self.torn_line
        if self.incomplete is not None:
            head["incomplete"] = self.incomplete
        return head


class _Scan:
    """The per-event work of one pass (kept out of :func:`scan_bundle` to keep each step small)."""

    def __init__(
        self,
        result: BundleScan,
        *,
        step: int | None,
        errors_only: bool,
        keep: Keep,
        on_row: Callable[[int, Row], None] | None,
    ) -> None:
        self.result = result
        self.on_row = on_row
        self.step = step
        self.errors_only = errors_only
        self.keep = keep
        self.head: list[tuple[int, Row]] = []
        self.tail: deque[tuple[int, Any, str]] = deque(maxlen=TAIL_ROWS)
        self.middle_errors: list[tuple[int, Row]] = []
        self.llm_labels: dict[str, str] = {}  # open llm_request id -> its label (one label per LLM call)

    def label(self, event: Any) -> str:
        kind = str(event.type)
        if kind == "llm_request":
            label = event_label(event)
            self.llm_labels[event.id] = label
            return label
        if kind == "llm_response" and event.parent_id in self.llm_labels:
            return self.llm_labels.pop(event.parent_id)
        return event_label(event)

    def add(self, event: Any) -> None:
        result = self.result
        result.counts.add(event)
        is_error = str(event.status) == "error"
        label = self.label(event)
        if self.step is not None and event.step != self.step:
            return
        result.at_step += 1
        if self.errors_only and not is_error:
            return
        position = result.selected
        result.selected += 1
        if self.keep == "all":
            if self.on_row is not None:
                self.on_row(position, timeline_row(event, label=label))
            else:
                result.rows.append((position, timeline_row(event, label=label)))
        elif self.keep == "bounded":
            self._bounded(position, event, label, is_error)

    def _bounded(self, position: int, event: Any, label: str, is_error: bool) -> None:
        if len(self.head) < HEAD_ROWS:
            self.head.append((position, timeline_row(event, label=label)))
            return
        if len(self.tail) == TAIL_ROWS:  # the oldest tail row leaves the tail: keep it if it is an error
            old_position, old_event, old_label = self.tail[0]
            if str(old_event.status) == "error" and len(self.middle_errors) < ERROR_ROWS:
                self.middle_errors.append((old_position, timeline_row(old_event, label=old_label)))
        self.tail.append((position, event, label))

    def finish(self) -> None:
        if self.keep == "bounded":
            tail = [(position, timeline_row(event, label=label)) for position, event, label in self.tail]
            self.result.rows = self.head + self.middle_errors + tail


def scan_events(
    manifest: Any,
    events: Any,
    *,
    integrity: str,
    step: int | None = None,
    errors_only: bool = False,
    keep: Keep = "all",
    on_row: Callable[[int, Row], None] | None = None,
) -> BundleScan:
    """Scan ``events`` (an iterable of pydantic events) of the run ``manifest`` (a ``TraceManifest``, or a
    ``Trace``, which has the same fields) as :func:`scan_bundle` does a bundle's, with ``integrity`` as
    given."""
    result = BundleScan(SummaryBuilder(manifest), integrity)
    scan = _Scan(result, step=step, errors_only=errors_only, keep=keep, on_row=on_row)
    for event in events:
        scan.add(event)
    scan.finish()
    return result


def scan_bundle(
    path: str | os.PathLike[str],
    *,
    step: int | None = None,
    errors_only: bool = False,
    keep: Keep = "bounded",
    on_row: Callable[[int, Row], None] | None = None,
    partial: bool = False,
) -> BundleScan:
    """Read the bundle at ``path`` in one streamed pass and return its :class:`BundleScan`.

    ``step`` and ``errors_only`` select the timeline's events (``--step``, ``--errors-only``); ``keep``
    says which selected rows are kept (module docstring); with ``keep="all"`` and ``on_row``, each row is
    given to ``on_row(position, row)`` as it is read instead of being kept (``--all``, ``--json``).
    Integrity is verified too (streamed hashing). ``partial`` (``--partial``, validate's reader mode):
    a final events.jsonl line without ``\\n`` in a ``running`` bundle (a run killed mid-write) is left out
    and its number kept in ``torn_line``; nothing on disk changes.

    Raises:
        TraceStorageError: the bundle is unreadable (as ``Trace.load`` would raise it).
    """
    from stepfork.trace.integrity import verify_bundle_integrity
    from stepfork.trace.reading import counted_events, open_bundle

    with open_bundle(path) as opened:
        stream = opened.events(torn_tail_ok=partial)
        result = scan_events(
            opened.manifest, stream, integrity="unknown", step=step, errors_only=errors_only, keep=keep,
            on_row=on_row,
        )  # fmt: skip
        result.torn_line = stream.torn
        opened.redactions()  # refused as Trace.load refuses it
        counted = counted_events(opened.manifest)
    if counted is not None and result.counts.events < counted:  # a finished run cut short (no integrity.json)
        result.incomplete = {"events": result.counts.events, "manifest_events": counted}
    result.integrity = str(verify_bundle_integrity(path).status)
    return result


class ImportedView:
    """What ``stepfork import`` recorded of a bundle's calls (otel-import.json; stepfork.replay.imported):
    the counts for the summary (``summary``: ``{convention, ...counts}`` or None) and the calls recorded
    without content, marked on their rows (:meth:`mark`)."""

    def __init__(self, summary: dict[str, Any] | None, table: Any) -> None:
        self.summary = summary
        self._table = table

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ImportedView:
        """The view of the bundle at ``path``; an empty view for a bundle not made by ``stepfork import``
        or whose extension file cannot be read."""
        from stepfork.replay.imported import IMPORT_EXTENSION, ImportedCalls, import_summary
        from stepfork.trace.errors import TraceError
        from stepfork.trace.reading import read_extension

        try:
            data = read_extension(path, IMPORT_EXTENSION)
        except (TraceError, ValueError, OSError):
            return cls(None, None)
        counts = import_summary(data)
        if counts is None:
            return cls(None, None)
        table = ImportedCalls(data)
        return cls({"convention": table.convention, **counts}, table)

    def head(self, summary: dict[str, Any]) -> dict[str, Any]:
        """``summary`` with ``imported`` added when the bundle was imported."""
        return summary if self.summary is None else {**summary, "imported": self.summary}

    def mark(self, row: Row) -> Row:
        """``row`` with ``content_captured: False`` when its call was imported without content."""
        if self._table is not None:
            info = self._table.get(str(row.get("id", "")))
            if info is not None and not info.content_captured:
                row["content_captured"] = False
        return row
