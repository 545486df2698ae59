"""Compact notebook renderings (``_repr_html_`` / ``_repr_pretty_``) built on the same pages as
``stepfork view``: a static, escaped table (the summary and the first rows) and, a click away, the full
view in a sandboxed ``<iframe srcdoc>`` (scripts allowed, no same-origin: the page cannot reach the
notebook; its own CSP forbids the network). Runs past :data:`FULL_VIEW_LIMIT` events get the table only
(write the page with :func:`stepfork.analysis.view.write_trace_view`).
"""

from __future__ import annotations

import html
from typing import Any

__all__ = [
    "FIRST_ROWS",
    "FULL_VIEW_LIMIT",
    "outcome_html",
    "outcome_text",
    "trace_html",
    "trace_text",
    "with_full_view",
]

FIRST_ROWS = 10  # rows shown in the static table
FULL_VIEW_LIMIT = 5_000  # events; above it the full page is not inlined in the notebook


def _table(
    caption: str, pairs: list[tuple[str, Any]], header: list[str], rows: list[list[Any]], more: int
) -> str:
    e = html.escape
    summary = "".join(
        f"<tr><th style='text-align:left'>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in pairs
    )
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    tail = f"<p>... {more} more</p>" if more > 0 else ""
    return (
        f"<div class='stepfork-view'><table><caption>{e(caption)}</caption><tbody>{summary}</tbody></table>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{tail}</div>"
    )


def with_full_view(static_html: str, page: str | None) -> str:
    """``static_html`` followed by a collapsed "Full view" holding ``page`` (a whole view page) in a
    sandboxed iframe; ``static_html`` alone when ``page`` is None."""
    if page is None:
        return static_html
    return (
        f"{static_html}<details><summary>Full view</summary>"
        f'<iframe sandbox="allow-scripts" style="width:100%;height:640px;border:1px solid #ddd" '
        f'srcdoc="{html.escape(page, quote=True)}"></iframe></details>'
    )


def _call_rows(trace: Any) -> tuple[list[list[Any]], int]:
    from stepfork.analysis.view._data import redacted

    rows: list[list[Any]] = []
    calls = [e for e in trace.events if str(e.type) in ("tool_call", "llm_request")]
    for event in calls[:FIRST_ROWS]:
        kind = str(event.type)
        if kind == "tool_call":
            label = event.name
        else:
            label = f"{event.provider}/{event.model}" if event.provider else event.model
        rows.append([event.step, kind, redacted(label), str(event.status)])
    return rows, max(0, len(calls) - FIRST_ROWS)


def trace_html(trace: Any) -> str:
    """The notebook rendering of a ``Trace``: summary, the first calls, the full view a click away."""
    from stepfork.analysis import view
    from stepfork.analysis.view._data import redacted

    rows, more = _call_rows(trace)
    pairs = [
        ("Agent", redacted(trace.agent_name)),
        ("Run", trace.run_id),
        ("Status", str(trace.status)),
        ("Events", len(trace.events)),
        ("Tool calls", sum(1 for e in trace.events if str(e.type) == "tool_call")),
        ("LLM calls", sum(1 for e in trace.events if str(e.type) == "llm_request")),
        ("Duration", "-" if trace.totals.duration_ms is None else f"{trace.totals.duration_ms} ms"),
    ]
    static = _table("Stepfork trace", pairs, ["step", "type", "name", "status"], rows, more)
    page = view.trace_html(trace) if len(trace.events) <= FULL_VIEW_LIMIT else None
    return with_full_view(static, page)


def trace_text(trace: Any) -> str:
    """The IPython text rendering of a ``Trace``: one summary line and the first calls."""
    rows, more = _call_rows(trace)
    lines = [f"Trace {trace.agent_name} {trace.run_id}: {trace.status}, {len(trace.events)} events"]
    lines += [f"  {step:>4}  {kind:<12} {label}  ({status})" for step, kind, label, status in rows]
    if more:
        lines.append(f"  ... {more} more")
    return "\n".join(lines)


def _outcome_pairs(outcome: Any) -> list[tuple[str, Any]]:
    status = {0: "COMPLETED", 1: "DIVERGED"}.get(outcome.exit_code, "REJECTED")
    pairs: list[tuple[str, Any]] = [
        ("Agent", outcome.agent_name),
        ("Run", outcome.run_id),
        ("Mode", outcome.mode),
        ("Status", status),
        ("Execution", outcome.execution.status),
        (
            "Dependency matching",
            f"{outcome.matching.status} ({outcome.matching.matched} of {outcome.matching.total})",
        ),
        ("Recorded behavior", outcome.behavior.status),
    ]
    difference = outcome.matching.diagnostic.difference if outcome.matching.diagnostic is not None else None
    if difference is not None:
        pairs.append(("Divergence at", difference.path))
    return pairs


def outcome_html(outcome: Any) -> str:
    """The notebook rendering of a ``ReplayOutcome``: the verdicts, the first calls, the replay report a
    click away (without the recording, which the outcome does not hold: ``write_replay_view`` has it)."""
    from stepfork.analysis.view import _replay_meta
    from stepfork.analysis.view._data import redacted
    from stepfork.analysis.view._page import page_chunks

    pairs = redacted([[k, v] for k, v in _outcome_pairs(outcome)])
    rows = [[c.index + 1, c.kind, redacted(c.label), c.action] for c in outcome.calls[:FIRST_ROWS]]
    static = _table(
        "Stepfork replay",
        [(k, v) for k, v in pairs],
        ["call", "kind", "name", "action"],
        rows,
        len(outcome.calls) - FIRST_ROWS,
    )
    page = b"".join(page_chunks("Stepfork replay report", [], _replay_meta(outcome))).decode()
    return with_full_view(static, page)


def outcome_text(outcome: Any) -> str:
    """The IPython text rendering of a ``ReplayOutcome``: one line per verdict."""
    from stepfork.analysis.view._data import redacted

    return "\n".join(f"{k}: {redacted(v)}" for k, v in _outcome_pairs(outcome))
