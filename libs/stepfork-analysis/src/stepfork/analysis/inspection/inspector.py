"""Inspect a bundle or a trace as a :class:`TraceInspection` (issue 32): the library behind ``stepfork
inspect``, for notebooks and scripts (spec "inspect"; the earlier implementation's ``stepfork.inspect``).
"""

from __future__ import annotations

import os
from typing import Any

from stepfork.analysis.inspection.models import EventSummary, TraceInspection
from stepfork.analysis.inspection.scan import BundleScan, ImportedView, scan_bundle, scan_events

__all__ = ["filter_timeline", "inspect_bundle", "inspect_trace"]


def _inspection(scan: BundleScan, imported: ImportedView | None, path: str | None) -> TraceInspection:
    head = scan.summary() if imported is None else imported.head(scan.summary())
    rows = [row if imported is None else imported.mark(row) for _, row in scan.rows]
    return TraceInspection(path=path, **head, timeline=[EventSummary(**row) for row in rows])


def inspect_bundle(
    path: str | os.PathLike[str], *, step: int | None = None, errors_only: bool = False, partial: bool = False
) -> TraceInspection:
    """Read the bundle at ``path`` and return its summary and its whole timeline, sanitized.

    ``step`` keeps the events at that logical step only, ``errors_only`` the events with status ``error``
    (``inspect --step``, ``--errors-only``); an empty timeline is no error here (the CLI's ``No events found
    at step N`` is its rendering). ``partial``: read a run that did not finish, leaving out a final line cut
    by a crash (``torn_line``), as ``validate --partial`` does. Integrity is verified (``integrity``); a
    bundle that fails it is still inspected. Nothing on disk changes. Memory holds the timeline: for a huge
    bundle, :func:`stepfork.analysis.inspection.scan_bundle` streams rows instead.

    Raises:
        TraceStorageError: the bundle is unreadable (missing file, invalid JSON or event, unsupported schema).
    """
    scan = scan_bundle(path, step=step, errors_only=errors_only, keep="all", partial=partial)
    return _inspection(scan, ImportedView.read(path), os.fspath(path))


def inspect_trace(trace: Any, *, path: str | None = None, integrity: str = "not_checked") -> TraceInspection:
    """The inspection of an in-memory ``Trace`` (built by hand, or loaded): its summary and every event.

    ``path`` and ``integrity`` are reported as given (a trace in memory has no integrity.json to verify).
    """
    scan = scan_events(trace, trace.events, integrity=integrity)
    return _inspection(scan, None, path)


def filter_timeline(
    inspection: TraceInspection, *, errors_only: bool = False, step: int | None = None
) -> TraceInspection:
    """A copy of ``inspection`` whose timeline keeps the error events (status ``error`` or type ``error``)
    when ``errors_only``, and the events at logical ``step`` when given; the summary is unchanged."""
    timeline = inspection.timeline
    if errors_only:
        timeline = [event for event in timeline if event.status == "error" or event.type == "error"]
    if step is not None:
        timeline = [event for event in timeline if event.step == step]
    return inspection.model_copy(update={"timeline": timeline})
