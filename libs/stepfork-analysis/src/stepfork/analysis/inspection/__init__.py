"""Inspection of a bundle: its run summary and event timeline, sanitized (spec "inspect"; issue 32).

What ``stepfork inspect`` renders, as a library API for notebooks and scripts::

    from stepfork.analysis.inspection import inspect_bundle

    found = inspect_bundle("failure.sftrace")
    found.agent_name, found.status, found.events, found.integrity
    [row.label for row in found.timeline if row.status == "error"]
    found.model_dump_json()

- :func:`inspect_bundle` (a bundle on disk), :func:`inspect_trace` (an in-memory ``Trace``),
  :func:`filter_timeline`: return a :class:`TraceInspection` (``models``).
- :func:`scan_bundle`: the streamed pass the CLI uses, in bounded memory for a bundle of any size (``scan``).
- ``rows``: how one event becomes a timeline row (labels, sanitized details).
- :class:`SummaryBuilder` (``summary``): the run summary, accumulated one event at a time; the one
  implementation behind ``stepfork inspect``'s summary, the HTML view's and ``runs_df``.

``stepfork.inspect`` re-exports these names at the earlier implementation's paths.
"""

from stepfork.analysis.inspection.inspector import filter_timeline, inspect_bundle, inspect_trace
from stepfork.analysis.inspection.models import EventSummary, TraceInspection
from stepfork.analysis.inspection.scan import HEAD_ROWS, BundleScan, ImportedView, Keep, scan_bundle
from stepfork.analysis.inspection.summary import SummaryBuilder

__all__ = [
    "HEAD_ROWS",
    "BundleScan",
    "EventSummary",
    "ImportedView",
    "Keep",
    "SummaryBuilder",
    "TraceInspection",
    "filter_timeline",
    "inspect_bundle",
    "inspect_trace",
    "scan_bundle",
]
