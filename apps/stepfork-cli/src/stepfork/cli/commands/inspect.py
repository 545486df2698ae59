"""``stepfork inspect PATH [--json] [--events] [--full] [--errors-only] [--step N] [--all] [--partial]``
(spec "inspect").

The command renders :mod:`stepfork.analysis.inspection` (the library API analysts use too, issue 32). The
bundle is streamed (``scan_bundle``): the timeline shows the first and last rows and the errors between
them, with a count of the rest; ``--all`` shows every row (paged on a terminal), and ``--json`` writes every
row, streamed from a second pass. Integrity is shown as the spec's label (``VERIFIED``, ``MISMATCH``,
``UNVERIFIED (legacy bundle)``), in the text and in ``--json`` as before; the library's ``integrity`` is the
``IntegrityStatus`` value.

``--partial`` reads a run that did not finish as ``validate --partial`` does (a torn final line of a
``running`` bundle is left out and reported, never repaired); without it such a bundle is refused with
a pointer to ``--partial``. A finished run whose events.jsonl holds fewer events than its manifest counts
(a legacy bundle cut short) is shown with a warning, ``incomplete`` in ``--json``.

Exit 0 shown, 1 when ``--step`` matches no event, 2 for an unreadable bundle. With ``--json`` errors are
also JSON objects on stdout, every command's shape (:func:`stepfork.cli.output.with_json_errors`):
``{"error": "unreadable_trace" | "missing_step" | "invalid_option", "message": ..., "exit_code": 2 | 1}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from stepfork.analysis.inspection import HEAD_ROWS


def inspect(
    path: Annotated[Path, typer.Argument(help="Path to a .sftrace directory bundle.")],
    as_json: Annotated[bool, typer.Option("--json", help="Emit sanitized machine-readable JSON.")] = False,
    events: Annotated[bool, typer.Option("--events", help="Show sanitized event details.")] = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="With --events, print each payload whole; by default a long payload is cut to a "
            "one-line preview, as replay's messages cut them. --json is always whole.",
        ),
    ] = False,
    errors_only: Annotated[bool, typer.Option("--errors-only", help="Show only error events.")] = False,
    step: Annotated[
        int | None, typer.Option("--step", help="Show events at a specific logical step.")
    ] = None,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Show every event of the timeline (paged on a terminal); by default the first and last "
            f"{HEAD_ROWS} and the errors.",
        ),
    ] = False,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="Allow incomplete in-progress traces (a run that did not finish): a final line cut by a "
            "crash is left out and reported, never repaired.",
        ),
    ] = False,
) -> None:
    """Inspect a .sftrace bundle locally."""
    from stepfork.analysis.inspection import ImportedView, Keep, scan_bundle
    from stepfork.cli.output import fail, sanitize_text, shown
    from stepfork.trace.errors import TraceStorageError

    keep: Keep = "none" if as_json or show_all else "bounded"
    try:
        found = scan_bundle(path, step=step, errors_only=errors_only, keep=keep, partial=partial)
    except TraceStorageError as exc:
        message = f"Unreadable bundle {shown(path)}: {sanitize_text(str(exc), keep=(path, shown(path)))}"
        if not partial and _torn_running(path, exc):
            message += "; pass --partial to inspect a run that did not finish"
        fail(message, 2, error="unreadable_trace")
    if step is not None and not found.at_step:
        fail(f"No events found at step {step}.", 1, error="missing_step", result=True)
    imported = ImportedView.read(path)
    if as_json:
        _stream_json(path, found, imported, step=step, errors_only=errors_only, partial=partial)
        return
    _render(
        path,
        found,
        imported,
        show_details=events,
        full=full,
        show_all=show_all,
        step=step,
        errors_only=errors_only,
        partial=partial,
    )


def _torn_running(path: Path, exc: Exception) -> bool:
    """True when ``exc`` is the refusal of a torn final events.jsonl line in a bundle whose manifest says
    ``running`` (a run killed mid-write: what ``--partial`` reads); a finished bundle so cut is corrupt."""
    from stepfork.trace.errors import TraceError
    from stepfork.trace.models import RunStatus
    from stepfork.trace.reading import open_bundle

    if getattr(exc, "code", None) != "invalid_json" or "truncated final line" not in str(exc):
        return False
    try:
        with open_bundle(path) as opened:
            return opened.manifest.status == RunStatus.RUNNING
    except (TraceError, ValueError, OSError):
        return False


_INTEGRITY_LABELS = {
    "verified": "VERIFIED",
    "mismatch": "MISMATCH",
    "unverified_legacy": "UNVERIFIED (legacy bundle)",
}  # spec "inspect" and "validate": the words the summary prints


def _head(found: Any, imported: Any) -> dict[str, Any]:
    """The summary of ``found`` (a BundleScan) as the command prints it: integrity as its label."""
    head: dict[str, Any] = imported.head(found.summary())
    head["integrity"] = _INTEGRITY_LABELS.get(head["integrity"], "UNKNOWN")
    return head


def _stream_json(
    path: Path, found: Any, imported: Any, *, step: int | None, errors_only: bool, partial: bool
) -> None:
    """Write ``{summary..., "timeline": [rows]}`` (the reference's TraceInspection), the rows streamed
    from a second pass over the bundle, so memory never holds the whole timeline."""
    import json
    import sys
    import textwrap

    from stepfork.analysis.inspection import scan_bundle

    text = json.dumps({**_head(found, imported), "timeline": []}, indent=2, ensure_ascii=False)
    opening = text[: text.rindex("[]")]
    out = sys.stdout
    out.write(opening + "[")
    first = True

    def write(_position: int, row: dict[str, object]) -> None:
        nonlocal first
        shown = textwrap.indent(json.dumps(imported.mark(row), indent=2, ensure_ascii=False), "    ")
        out.write(("\n" if first else ",\n") + shown)
        first = False

    scan_bundle(path, step=step, errors_only=errors_only, keep="all", on_row=write, partial=partial)
    out.write("]\n}\n" if first else "\n  ]\n}\n")


def _tool_calls_text(head: dict[str, Any]) -> object:
    """The tool calls, and among them the ``http`` calls (requests outside the agent's order, issue 29)."""
    requests = head.get("http_requests") or 0
    if not requests:
        return head["tool_calls"]
    word = "request" if requests == 1 else "requests"
    return f"{head['tool_calls']} ({requests} HTTP {word} outside the agent's order)"


def _summary_lines(head: dict[str, Any]) -> list[tuple[str, object]]:
    duration = "-" if head["duration_ms"] is None else f"{head['duration_ms']} ms"
    lines: list[tuple[str, object]] = [
        ("Agent", head["agent_name"]),
        ("Run", head["run_id"]),
        ("Status", str(head["status"]).upper()),
        ("Events", head["events"]),
    ]
    incomplete = head.get("incomplete")
    if isinstance(incomplete, dict):  # a finished run cut short: say so before anything else is read
        lines.append(
            (
                "Warning",
                f"incomplete bundle: {incomplete['events']} events of the "
                f"{incomplete['manifest_events']} the manifest counts; cut or edited after the run ended "
                "(replay and export refuse it; `stepfork validate` lists its problems)",
            )
        )
    lines += [
        ("Schema", head["schema_version"]),
        ("Created", head["created_at"]),
        ("Ended", head["ended_at"] or "-"),
        ("Tool calls", _tool_calls_text(head)),
        ("LLM calls", head["llm_calls"]),
        ("Duration", duration),
    ]
    if head["llm_calls"]:
        tokens = head["tokens"]
        if tokens is None:
            lines.append(("Tokens", "not recorded"))
        else:
            shown = f"{tokens['total']} ({tokens['prompt']} prompt, {tokens['completion']} completion)"
            lines.append(("Tokens", shown))
        cost = head["llm_cost_usd"]
        lines.append(("LLM cost", "not recorded" if cost is None else f"${cost:.4f}"))
        latency = head["llm_latency_ms"]
        calls = max(1, int(head["llm_calls"]))
        lines.append(
            (
                "LLM latency",
                "not recorded" if latency is None else f"{latency} ms in all, {latency // calls} ms per call",
            )
        )
    lines.append(("Integrity", head["integrity"]))
    if head.get("torn_line") is not None:
        lines.append(("Torn line", f"events.jsonl:{head['torn_line']} cut by a crash; not read (--partial)"))
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
    return lines


_COLUMNS = ("Step", "Type", "Name/Model", "Status", "Latency", "Tokens", "Cost")


def _cells(row: dict[str, Any]) -> list[str]:
    details = row["details"] if isinstance(row["details"], dict) else {}
    tokens = details.get("total_tokens")
    if tokens is None and (details.get("prompt_tokens") is not None or details.get("completion_tokens")):
        tokens = (details.get("prompt_tokens") or 0) + (details.get("completion_tokens") or 0)
    cost = details.get("cost_usd")
    latency = row["duration_ms"]
    return [
        str(row["step"]),
        str(row["type"]),
        str(row["label"]),
        str(row["status"]) + (" (content not captured)" if row.get("content_captured") is False else ""),
        "" if latency is None else f"{latency} ms",
        "" if tokens is None else str(tokens),
        "" if cost is None else f"${cost:.4f}",
    ]


def _render(
    path: Path,
    found: Any,
    imported: Any,
    *,
    show_details: bool,
    full: bool,
    show_all: bool,
    step: int | None,
    errors_only: bool,
    partial: bool,
) -> None:
    """The summary, then the timeline: the bounded rows of ``found``, or with ``show_all`` every row from
    a second streamed pass (through the terminal's pager when stdout is a terminal). With
    ``show_details``, each payload is replay's one-line preview (cut to ``PREVIEW_CHARS``, a 6 MB tool
    output must not print a 6 MB line) unless ``full``."""
    import contextlib
    import json
    import sys

    from rich.text import Text

    from stepfork.analysis.inspection import scan_bundle
    from stepfork.cli.output import console, escape_controls
    from stepfork.replay.diagnostics import PREVIEW_CHARS, preview

    out = console()
    cut = False
    out.soft_wrap = True  # one line per row, however wide: a pipe's 80 columns must not fold it
    out.print("Stepfork Trace Inspector")
    out.print()
    for label, value in _summary_lines(_head(found, imported)):
        out.print(Text(f"{label + ':':<15}{value}"))
    out.print()
    out.print("Event Timeline")
    out.print()
    widths = [5, 13, 24, 6, 8, 6, 8]
    if found.rows:
        widths[2] = max(widths[2], *(len(str(row["label"])) for _, row in found.rows))
    header = _COLUMNS + (("Details",) if show_details else ())

    def line(cells: list[str] | tuple[str, ...]) -> str:
        parts = [
            cell.rjust(width) if index in (0, 4, 5, 6) else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=False))
        ]
        parts += list(cells[len(widths) :])
        return "  ".join(parts).rstrip()

    def row_text(row: dict[str, Any]) -> str:
        cells = _cells(imported.mark(row))
        if show_details:
            nonlocal cut
            if full:
                details = json.dumps(row["details"], ensure_ascii=False, separators=(",", ":"))
            else:
                details = preview(row["details"])
                cut = cut or (len(details) >= PREVIEW_CHARS and details.endswith("..."))
            cells.append(escape_controls(details))
        return line(cells)

    def cut_note() -> None:
        if cut:
            out.print()
            note = f"Details longer than {PREVIEW_CHARS} characters are cut; --full prints them whole."
            out.print(Text(note))

    pager = out.pager() if show_all and sys.stdout.isatty() else contextlib.nullcontext()
    with pager:
        out.print(Text(line(header)))
        if show_all:
            scan_bundle(
                path,
                step=step,
                errors_only=errors_only,
                keep="all",
                on_row=lambda _position, row: out.print(Text(row_text(row))),
                partial=partial,
            )
            cut_note()
            return
        expected = 0
        for position, row in found.rows:
            if position > expected:
                out.print(Text(f"  ... {position - expected} more events (--all shows every event)"))
            out.print(Text(row_text(row)))
            expected = position + 1
        if found.selected > expected:
            out.print(Text(f"  ... {found.selected - expected} more events (--all shows every event)"))
        if found.hidden:
            out.print()
            out.print(
                Text(
                    f"Showing {len(found.rows)} of {found.selected} events: the first and last "
                    f"{HEAD_ROWS}, and errors between them; --all shows every event."
                )
            )
        cut_note()


def register(app: typer.Typer) -> None:
    """Add the ``inspect`` command to ``app``."""
    app.command("inspect")(inspect)
