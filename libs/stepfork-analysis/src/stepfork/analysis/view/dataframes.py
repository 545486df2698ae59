"""pandas DataFrames of runs for notebooks: :func:`events_df` (one row per event) and :func:`runs_df` (one
row per run). pandas comes with the ``notebook`` extra: ``pip install "stepfork-analysis[notebook]"``.

Every payload and name is redacted like every other output. Durations are in milliseconds, costs in USD,
timestamps are timezone-aware UTC (``datetime64[..., UTC]``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

__all__ = ["EVENT_COLUMNS", "RUN_COLUMNS", "events_df", "runs_df"]

EVENT_COLUMNS = (
    "step",
    "id",
    "parent_id",
    "type",
    "kind",
    "name",
    "status",
    "timestamp",
    "offset_ms",
    "duration_ms",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost_usd",
    "input_hash",
    "output_hash",
    "input",
    "output",
)
"""Columns of :func:`events_df`, in order:

- ``step`` (int), ``id``, ``parent_id`` (str or None), ``type`` (the event type: ``tool_call``...),
  ``kind`` (``tool``, ``llm``, ``run``, ``state`` or ``error``), ``name`` (tool name, ``provider/model``,
  error type, state key; None for run events), ``status`` (``ok``/``error``);
- ``timestamp`` (UTC), ``offset_ms`` (float: milliseconds since the run was created), ``duration_ms``
  (the recorded duration or None);
- ``prompt_tokens``, ``completion_tokens``, ``total_tokens`` (int or None; llm_response events),
  ``cost_usd`` (float or None);
- ``input_hash``, ``output_hash`` (SHA-256 fingerprints or None), ``input``, ``output`` (the redacted JSON
  payloads: ``before``/``after`` of a state change as ``{"before", "after"}`` in ``output``, an error's
  ``{"message", "details"}`` in ``output``).
"""

RUN_COLUMNS = (
    "path",
    "run_id",
    "agent_name",
    "status",
    "created_at",
    "ended_at",
    "duration_ms",
    "events",
    "tool_calls",
    "llm_calls",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost_usd",
    "integrity",
)
"""Columns of :func:`runs_df`, in order: ``path`` (the bundle), ``run_id``, ``agent_name``, ``status``
(``completed``, ``failed``, ``running``), ``created_at``, ``ended_at`` (UTC; the last event),
``duration_ms`` (the manifest's, else last - first event), ``events``, ``tool_calls``, ``llm_calls``,
``errors`` (events with status ``error``), ``prompt_tokens``, ``completion_tokens``, ``total_tokens``
(summed over llm_response events), ``cost_usd`` (summed recorded cost, else the manifest's total, else
None), ``integrity`` (``verified``, ``mismatch`` or ``unverified_legacy``)."""

_KIND = {
    "tool_call": "tool",
    "tool_result": "tool",
    "llm_request": "llm",
    "llm_response": "llm",
    "run_start": "run",
    "run_end": "run",
    "state_change": "state",
    "error": "error",
}


def _pandas() -> Any:
    from importlib import import_module

    try:
        return import_module("pandas")  # untyped for mypy (no pandas-stubs here); used through Any
    except ImportError:
        raise ImportError(
            'stepfork.analysis DataFrames need pandas: pip install "stepfork-analysis[notebook]"'
        ) from None


def _name(event: Any) -> str | None:
    kind = str(event.type)
    if kind in ("tool_call", "tool_result"):
        return str(event.name)
    if kind == "llm_request":
        return f"{event.provider}/{event.model}" if event.provider else str(event.model)
    if kind == "llm_response":
        return None if event.model is None else str(event.model)
    if kind == "error":
        return str(event.error_type)
    if kind == "state_change":
        return None if event.key is None else str(event.key)
    return None


def _row(event: Any, origin: Any) -> dict[str, Any]:
    from stepfork.analysis.view._data import redacted

    kind = str(event.type)
    if kind == "state_change":
        output: Any = {"before": event.before, "after": event.after}
    elif kind == "error":
        output = {"message": event.message, "details": event.details}
    else:
        output = getattr(event, "output", None)
    return {
        "step": event.step,
        "id": event.id,
        "parent_id": event.parent_id,
        "type": kind,
        "kind": _KIND.get(kind, kind),
        "name": redacted(_name(event)),
        "status": str(event.status),
        "timestamp": event.timestamp,
        "offset_ms": (event.timestamp - origin).total_seconds() * 1000.0,
        "duration_ms": event.duration_ms,
        "prompt_tokens": getattr(event, "prompt_tokens", None),
        "completion_tokens": getattr(event, "completion_tokens", None),
        "total_tokens": getattr(event, "total_tokens", None),
        "cost_usd": getattr(event, "cost_usd", None),
        "input_hash": event.input_hash,
        "output_hash": event.output_hash,
        "input": redacted(getattr(event, "input", None)),
        "output": redacted(output),
    }


def events_df(trace: Any) -> Any:
    """A pandas DataFrame with one row per event of ``trace`` (a ``Trace`` or a bundle path), in bundle
    order, with the columns of :data:`EVENT_COLUMNS`.

    Raises:
        ImportError: pandas is not installed (the message names the ``notebook`` extra).
        TraceStorageError: ``trace`` is a path to an unreadable bundle.
    """
    pd = _pandas()
    if isinstance(trace, (str, os.PathLike)):
        from stepfork.trace.bundle import load_trace

        trace = load_trace(trace)
    rows = [_row(e, trace.created_at) for e in trace.events]
    frame = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    for column in ("duration_ms", "prompt_tokens", "completion_tokens", "total_tokens"):
        frame[column] = frame[column].astype("Int64")
    frame["cost_usd"] = frame["cost_usd"].astype("Float64")
    return frame


def runs_df(paths: Iterable[str | os.PathLike[str]]) -> Any:
    """A pandas DataFrame with one row per bundle of ``paths`` (in the order given), with the columns of
    :data:`RUN_COLUMNS`. Each bundle is streamed (one event in memory at a time) and its integrity checked.

    Raises:
        ImportError: pandas is not installed (the message names the ``notebook`` extra).
        TraceStorageError: a bundle is unreadable (its path in the message).
    """
    pd = _pandas()
    from stepfork.analysis.view._data import SummaryBuilder
    from stepfork.trace.integrity import verify_bundle_integrity
    from stepfork.trace.reading import open_bundle

    rows = []
    for path in paths:
        integrity = str(verify_bundle_integrity(path).status)
        with open_bundle(path) as opened:
            summary = SummaryBuilder(opened.manifest, integrity=integrity)
            for event in opened.events():
                summary.add(event)
        data = summary.result()
        data["path"] = os.fspath(path)
        rows.append({column: data.get(column) for column in RUN_COLUMNS})
    frame = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    for column in ("created_at", "ended_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    for column in (
        "duration_ms",
        "events",
        "tool_calls",
        "llm_calls",
        "errors",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
    ):
        frame[column] = frame[column].astype("Int64")
    frame["cost_usd"] = frame["cost_usd"].astype("Float64")
    return frame
