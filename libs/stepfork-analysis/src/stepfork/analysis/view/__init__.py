"""``stepfork.analysis.view``: one self-contained HTML file showing a run, a replay, a diff or a minimization.

The page is plain HTML, CSS and JavaScript shipped as package data (``assets/``; no build step, no CDN),
with the data embedded as JSON (see :mod:`._page` for the safety rules). It works from a ``file://`` URL
and as a CI artifact. docs/view.md describes what each view shows.

Functions that take a bundle path stream events.jsonl one event at a time into the file (memory: one
event, the summary counters and the page's fixed parts), so a bundle of any size can be viewed.

Notebooks: ``Trace`` and ``ReplayOutcome`` draw themselves with :mod:`.notebook`. pandas DataFrames of
runs (``events_df``, ``runs_df``; the ``notebook`` extra) are in the public submodule :mod:`.dataframes`,
which this face does not import: ``Trace._repr_html_`` (stepfork.trace) loads this face, and the
DataFrames load traces (docs/decisions.md, "Import cycles").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from stepfork.analysis._shared.atomic import write_chunks_atomically
from stepfork.analysis.view._data import SummaryBuilder, event_items, path_to_pointer, redacted
from stepfork.analysis.view._page import is_page, page_chunks

__all__ = [
    "default_output",
    "diff_html",
    "is_view_page",
    "minimize_html",
    "replay_html",
    "trace_html",
    "write_diff_view",
    "write_minimize_view",
    "write_replay_view",
    "write_trace_view",
]

PathLike = str | os.PathLike[str]


def default_output(bundle: PathLike) -> Path:
    """Where ``stepfork view BUNDLE`` writes by default: beside the bundle, ``run.sftrace`` ->
    ``run.html`` (a trailing slash ignored). For a bundle URL (``s3://b/runs/run.sftrace``, also in the
    collapsed ``s3:/b/...`` form a ``Path`` argument makes of it) there is no "beside": ``run.html`` in the
    current directory (docs/view.md)."""
    from stepfork.trace._urls import url_of

    url = url_of(bundle)
    if url is not None:
        name = url.rstrip("/").rsplit("/", 1)[-1] or "bundle"
        stem = name[: -len(".sftrace")] if name.endswith(".sftrace") else name
        return Path(f"{stem}.html")
    path = Path(os.path.normpath(bundle))
    stem = path.name[: -len(".sftrace")] if path.name.endswith(".sftrace") else path.name
    return path.with_name(f"{stem}.html")


def is_view_page(path: PathLike) -> bool:
    """True when ``path`` is a regular file (not a symlink) whose first bytes are those of a page this
    module writes (``stepfork view``, ``replay --html``, ``minimize --html``, ``pytest --stepfork-html``);
    False otherwise, also when it cannot be read. What ``minimize --overwrite`` may replace at ``--html``."""
    from stepfork.trace import _files

    try:
        fd = _files.open_regular(Path(path))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        return is_page(handle.read(1 << 16))


def _integrity(bundle: Path) -> str:
    from stepfork.trace.integrity import verify_bundle_integrity

    return str(verify_bundle_integrity(bundle).status)


def _bundle_chunks(bundle: Path, meta: dict[str, Any], title: str) -> Iterator[bytes]:
    """The page of ``meta``'s view with the events of ``bundle`` streamed into it; ``meta["summary"]`` is
    filled in after the last event. Raises TraceStorageError (via open_bundle) for an unreadable bundle."""
    from stepfork.trace.reading import open_bundle

    integrity = _integrity(bundle)
    with open_bundle(bundle) as opened:
        manifest = opened.manifest
        summary = SummaryBuilder(manifest, integrity=integrity)
        # a crashed recorder's bundle (still `running`) may end in a torn line: show what was written
        stream = opened.events(torn_tail_ok=True)
        events = event_items(stream, summary, manifest.created_at)

        def late_meta() -> dict[str, Any]:
            summary.extra["torn_line"] = stream.torn
            return {**meta, "summary": summary.result()}

        yield from page_chunks(title, events, late_meta)


def _trace_chunks(trace: Any, meta: dict[str, Any], title: str) -> Iterator[bytes]:
    summary = SummaryBuilder(trace.manifest, integrity=None)
    origin: datetime = trace.created_at
    events = event_items(trace.events, summary, origin)
    yield from page_chunks(title, events, lambda: {**meta, "summary": summary.result()})


def _source_chunks(source: Any, meta: dict[str, Any], title: str) -> Iterator[bytes]:
    if isinstance(source, (str, os.PathLike)):
        return _bundle_chunks(Path(source), meta, title)
    return _trace_chunks(source, meta, title)


def _write(destination: PathLike, chunks: Iterable[bytes], overwrite: bool) -> Path:
    return write_chunks_atomically(Path(destination), chunks, replace=overwrite)


def _text(chunks: Iterable[bytes]) -> str:
    return b"".join(chunks).decode("utf-8")


# ------------------------------------------------------------------------------------------------- trace


def _trace_meta(title: str) -> dict[str, Any]:
    return {"view": "trace", "title": title}


def write_trace_view(bundle: PathLike, destination: PathLike, *, overwrite: bool = False) -> Path:
    """Write the view of the bundle at ``bundle`` to ``destination`` (atomically) and return its path.

    Raises:
        TraceStorageError: the bundle is unreadable (nothing is written).
        FileExistsError: ``destination`` exists and ``overwrite`` is false.
        OSError: the file cannot be written.
    """
    title = f"Stepfork: {Path(bundle).name}"
    return _write(destination, _bundle_chunks(Path(bundle), _trace_meta(title), title), overwrite)


def trace_html(trace: Any) -> str:
    """The full view page (HTML text) of a trace: a bundle path or an in-memory ``Trace``."""
    name = trace if isinstance(trace, (str, os.PathLike)) else redacted(trace.agent_name)
    title = f"Stepfork: {name}"
    return _text(_source_chunks(trace, _trace_meta(title), title))


# -------------------------------------------------------------------------------------------------- diff


def _diff_meta(result: Any) -> dict[str, Any]:
    steps = []
    for step in result.steps:
        base = step.baseline.payload if step.baseline is not None else None
        cand = step.candidate.payload if step.candidate is not None else None
        steps.append(
            {
                "kind": step.kind,
                "step_type": step.step_type,
                "label": step.label,
                "baseline_step": step.baseline.step if step.baseline is not None else None,
                "candidate_step": step.candidate.step if step.candidate is not None else None,
                "baseline": base,
                "candidate": cand,
                "changes": [
                    {"path": c.path, "pointer": path_to_pointer(c.path), "kind": c.kind} for c in step.changes
                ],
            }
        )
    return redacted(  # type: ignore[no-any-return]
        {
            "view": "diff",
            "title": "Stepfork diff",
            "equivalent": result.equivalent,
            "baseline": result.baseline.to_dict(),
            "candidate": result.candidate.to_dict(),
            "counts": {
                "added": result.added,
                "removed": result.removed,
                "changed": result.changed,
                "unchanged": result.unchanged,
            },
            "steps": steps,
        }
    )


def diff_html(result: Any) -> str:
    """The side-by-side view page of a :class:`~stepfork.analysis.diff.DiffResult` (HTML text)."""
    return _text(page_chunks("Stepfork diff", [], _diff_meta(result)))


def write_diff_view(result: Any, destination: PathLike, *, overwrite: bool = False) -> Path:
    """Write the diff view of ``result`` (a DiffResult) to ``destination``; raises as
    :func:`write_trace_view` (but no TraceStorageError: the runs are already loaded)."""
    return _write(destination, page_chunks("Stepfork diff", [], _diff_meta(result)), overwrite)


# ------------------------------------------------------------------------------------------------ replay


def _replay_meta(outcome: Any) -> dict[str, Any]:
    report = outcome.to_dict()
    diagnostic = outcome.matching.diagnostic
    divergence = None
    if diagnostic is not None:
        difference = diagnostic.difference
        divergence = {
            "step": diagnostic.step,
            "index": diagnostic.index,
            "path": difference.path if difference is not None else None,
            "pointer": path_to_pointer(difference.path) if difference is not None else None,
            "expected_label": diagnostic.expected_label,
            "actual_label": diagnostic.actual_label,
            "expected_kind": diagnostic.expected_kind,
            "actual_kind": diagnostic.actual_kind,
            "expected_input": diagnostic.expected_input,
            "actual_input": diagnostic.actual_input,
            "message": outcome.matching.message,
        }
    behavior_pointer = path_to_pointer(outcome.behavior.path) if outcome.behavior.path else None
    return redacted(  # type: ignore[no-any-return]
        {
            "view": "replay",
            "title": "Stepfork replay report",
            "outcome": report,
            "divergence": divergence,
            "behavior_pointer": behavior_pointer,
        }
    )


def replay_html(outcome: Any, trace: Any) -> str:
    """The replay report page: ``outcome`` (a ReplayOutcome) beside the recording ``trace`` (a bundle
    path or a ``Trace``)."""
    return _text(_source_chunks(trace, _replay_meta(outcome), "Stepfork replay report"))


def write_replay_view(
    outcome: Any, bundle: PathLike, destination: PathLike, *, overwrite: bool = False
) -> Path:
    """Write the replay report of ``outcome`` against the recording at ``bundle`` to ``destination``;
    raises as :func:`write_trace_view`."""
    title = "Stepfork replay report"
    return _write(destination, _bundle_chunks(Path(bundle), _replay_meta(outcome), title), overwrite)


# ---------------------------------------------------------------------------------------------- minimize


def _minimize_meta(result: Any) -> dict[str, Any]:
    return redacted(  # type: ignore[no-any-return]
        {
            "view": "minimize",
            "title": "Stepfork minimization",
            "minimize": result.to_dict(),
            "kept_steps": list(result.kept_steps),
        }
    )


def minimize_html(result: Any) -> str:
    """The minimization page of a MinimizeResult: the original bundle's calls, kept and removed."""
    return _text(_source_chunks(result.original, _minimize_meta(result), "Stepfork minimization"))


def write_minimize_view(result: Any, destination: PathLike, *, overwrite: bool = False) -> Path:
    """Write the minimization view of ``result`` (its ``original`` bundle streamed) to ``destination``;
    raises as :func:`write_trace_view`."""
    title = "Stepfork minimization"
    return _write(
        destination, _bundle_chunks(Path(result.original), _minimize_meta(result), title), overwrite
    )
