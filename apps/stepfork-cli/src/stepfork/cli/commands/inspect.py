"""``stepfork inspect PATH [--json] [--events] [--errors-only] [--step N]`` (spec "inspect").

Exit 0 shown, 1 when ``--step`` matches no event, 2 for an unreadable bundle. With ``--json`` errors are
JSON objects on stdout: ``{"error": "unreadable_trace" | "missing_step", "message": ...}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

_INTEGRITY_LABELS = {
    "verified": "VERIFIED",
    "mismatch": "MISMATCH",
    "unverified_legacy": "UNVERIFIED (legacy bundle)",
}


def inspect(
    path: Annotated[Path, typer.Argument(help="Path to a .sftrace directory bundle.")],
    as_json: Annotated[bool, typer.Option("--json", help="Emit sanitized machine-readable JSON.")] = False,
    events: Annotated[bool, typer.Option("--events", help="Show sanitized event details.")] = False,
    errors_only: Annotated[bool, typer.Option("--errors-only", help="Show only error events.")] = False,
    step: Annotated[
        int | None, typer.Option("--step", help="Show events at a specific logical step.")
    ] = None,
) -> None:
    """Inspect a .sftrace bundle locally."""
    from stepfork.cli.output import emit_json, fail, sanitize_text
    from stepfork.cli.render.timeline import summary, timeline_row
    from stepfork.trace.bundle import Trace
    from stepfork.trace.errors import TraceStorageError
    from stepfork.trace.integrity import verify_bundle_integrity

    try:
        trace = Trace.load(path)
    except TraceStorageError as exc:
        message = f"Unreadable bundle {path}: {sanitize_text(str(exc))}"
        if as_json:
            emit_json({"error": "unreadable_trace", "message": message})
            raise typer.Exit(2) from None
        fail(message, 2)
    integrity = _INTEGRITY_LABELS.get(str(verify_bundle_integrity(path).status), "UNKNOWN")
    at_step = [e for e in trace.events if step is None or e.step == step]
    selected = [e for e in at_step if not errors_only or str(e.status) == "error"]
    if step is not None and not at_step:
        message = f"No events found at step {step}."
        if as_json:
            emit_json({"error": "missing_step", "message": message})
            raise typer.Exit(1)
        fail(message, 1)

    head = summary(trace, integrity)
    rows = [timeline_row(e) for e in selected]
    _mark_imported(path, head, selected, rows)
    if as_json:
        emit_json({**head, "timeline": rows})
        return
    _render(head, rows, show_details=events)


def _render(head: dict[str, object], rows: list[dict[str, object]], *, show_details: bool) -> None:
    import json

    from rich.table import Table
    from rich.text import Text

    from stepfork.cli.output import console, escape_controls

    out = console()
    duration = "-" if head["duration_ms"] is None else f"{head['duration_ms']} ms"
    lines = [
        ("Agent", head["agent_name"]),
        ("Run", head["run_id"]),
        ("Status", str(head["status"]).upper()),
        ("Events", head["events"]),
        ("Schema", head["schema_version"]),
        ("Created", head["created_at"]),
        ("Ended", head["ended_at"] or "-"),
        ("Tool calls", head["tool_calls"]),
        ("LLM calls", head["llm_calls"]),
        ("Duration", duration),
        ("Integrity", head["integrity"]),
    ]
    failure = head["failure"]
    if isinstance(failure, dict):
        lines.append(("Failure", f"{failure['type']}: {failure['message']} (step {failure['step']})"))
    imported = head.get("imported")
    if isinstance(imported, dict):
        lines.append(
            (
                "Imported",
                f"OpenTelemetry ({imported['convention']}): {imported['not_captured']} calls without "
                f"content, {imported['partial']} with partial input",
            )
        )
    out.print("Stepfork Trace Inspector")
    out.print()
    for label, value in lines:
        out.print(Text(f"{label + ':':<15}{value}"))
    out.print()
    out.print("Event Timeline")
    out.print()
    table = Table()
    table.add_column("Step", justify="right")
    table.add_column("Type")
    table.add_column("Name/Model")
    table.add_column("Status")
    if show_details:
        table.add_column("Details", overflow="fold")
    for row in rows:
        status = str(row["status"]) + (
            " (content not captured)" if row.get("content_captured") is False else ""
        )
        cells = [str(row["step"]), str(row["type"]), str(row["label"]), status]
        if show_details:
            details = json.dumps(row["details"], ensure_ascii=False, separators=(",", ":"))
            cells.append(escape_controls(details))
        table.add_row(*(Text(cell) for cell in cells))
    out.print(table)


def _mark_imported(
    path: Path, head: dict[str, object], events: Sequence[object], rows: list[dict[str, object]]
) -> None:
    """For a bundle made by ``stepfork import``: ``head["imported"]`` (counts) and, on the rows of calls
    recorded without content, ``content_captured: false`` (stepfork.replay.imported)."""
    from stepfork.replay.imported import IMPORT_EXTENSION, ImportedCalls, import_summary
    from stepfork.trace.bundle import read_extension
    from stepfork.trace.errors import TraceError

    try:
        data = read_extension(path, IMPORT_EXTENSION)
    except (TraceError, ValueError, OSError):
        return
    counts = import_summary(data)
    if counts is None:
        return
    table = ImportedCalls(data)
    head["imported"] = {"convention": table.convention, **counts}
    for event, row in zip(events, rows, strict=True):
        info = table.get(str(getattr(event, "id", "")))
        if info is not None and not info.content_captured:
            row["content_captured"] = False


def register(app: typer.Typer) -> None:
    """Add the ``inspect`` command to ``app``."""
    app.command("inspect")(inspect)
