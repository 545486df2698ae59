"""``stepfork import SPANS -o OUT.sftrace [--trace-id ID] [--convention C]`` (issue 15).

C is ``auto``, ``genai`` or ``openinference``.

SPANS: OTLP JSON (a ``{"resourceSpans": [...]}`` document or the file exporters' JSON lines), OTLP
protobuf, or a directory of them. One trace -> one bundle at OUT. Several traces and no --trace-id -> OUT
is a directory holding one ``<trace id>.sftrace`` per trace, and a summary table is printed. Bundles are
redacted like recordings (docs/import.md). Exit codes: 0 imported, 2 bad input (unreadable or not OTLP,
no such trace, OUT exists without --overwrite, the ``otel`` extra missing).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer


def import_spans(
    spans: Path = typer.Argument(..., help="OTLP JSON / JSON lines / protobuf file, or a directory of them."),
    output: Path = typer.Option(..., "--output", "-o", help="The .sftrace bundle (a directory for several)."),
    trace_id: str | None = typer.Option(None, "--trace-id", help="Import this trace only (32 hex digits)."),
    convention: str = typer.Option(
        "auto", "--convention", help="Span attributes to read: auto, genai or openinference."
    ),
    agent_name: str | None = typer.Option(
        None, "--agent", help="Agent name of the bundles (default: the resource's service.name)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUT if it exists."),
) -> None:
    """Import OpenTelemetry spans (GenAI or OpenInference) as .sftrace bundles."""
    from stepfork.cli.guide import bundle_not_spans_problem
    from stepfork.cli.output import fail, sanitize_text

    wrong = bundle_not_spans_problem(spans)
    if wrong is not None:
        fail(wrong, 2)
    try:
        from stepfork.analysis.otlp import OtlpDecodeError, OtlpImportError, import_otlp
        from stepfork.trace.errors import TraceError

        traces = import_otlp(spans, trace_id=trace_id, convention=convention, agent_name=agent_name)
    except ImportError as exc:
        fail(f"stepfork import needs the otel extra: pip install 'stepfork-analysis[otel]' ({exc})", 2)
    except (OtlpDecodeError, OtlpImportError, ValueError, OSError) as exc:
        fail(f"Cannot import {spans}: {sanitize_text(str(exc), keep=(spans,))}", 2)
    single = len(traces) == 1
    from stepfork.trace._outputs import bundle_output_problem

    inside = bundle_output_problem(output, into=not single)
    if inside is not None:  # never a bundle inside a bundle (docs/cli.md "Where outputs may go")
        fail(sanitize_text(inside), 2)
    if single and output.suffix != ".sftrace":
        fail(f"Cannot import {spans}: the output must end in .sftrace: {output}", 2)
    if not single:
        if output.exists() and any(output.iterdir()) and not overwrite:
            fail(f"Cannot import {spans}: {output} exists (use --overwrite)", 2)
        output.mkdir(parents=True, exist_ok=True)
    rows = []
    for trace in traces:
        target = output if single else output / f"{trace.trace_id}.sftrace"
        try:
            trace.save(target, overwrite=overwrite)
        except (TraceError, OSError) as exc:
            if getattr(exc, "code", None) == "already_exists":
                fail(f"Cannot write {target}: it exists (use --overwrite)", 2)
            fail(f"Cannot write {target}: {sanitize_text(str(exc))}", 2)
        rows.append((trace, target))
    if single:
        trace, target = rows[0]
        typer.echo(f"Imported trace {trace.trace_id} -> {target}")
        typer.echo(f"  {_describe(trace)}")
        _warn_skipped(traces, convention)
        return
    typer.echo(f"Imported {len(rows)} traces into {output}")
    typer.echo("")
    typer.echo(f"{'Trace':<34}{'Status':<11}{'LLM':>5}{'Tools':>7}{'No content':>12}{'Partial':>9}  Bundle")
    for trace, target in rows:
        llm = sum(1 for e in trace.events if e.type.value == "llm_request")
        tools = sum(1 for e in trace.events if e.type.value == "tool_call")
        typer.echo(
            f"{trace.trace_id:<34}{trace.status.value:<11}{llm:>5}{tools:>7}"
            f"{trace.not_captured():>12}{trace.partial():>9}  {target.name}"
        )
    _warn_skipped(traces, convention)


def _warn_skipped(traces: Sequence[Any], convention: str) -> None:
    """One warning line on stderr when ``--convention`` ignored LLM/tool spans of the other convention
    (the import still succeeds, exit 0: docs/import.md)."""
    skipped: dict[str, int] = {}
    for trace in traces:
        for name, count in trace.skipped_calls().items():
            skipped[name] = skipped.get(name, 0) + count
    if not skipped:
        return
    names = ", ".join(f"{count} {name}" for name, count in sorted(skipped.items()))
    other = sorted(skipped)[0]
    typer.echo(
        f"Warning: --convention {convention} skipped the LLM and tool spans of another convention "
        f"({names}); import them with --convention auto (or --convention {other}).",
        err=True,
    )


def _describe(trace: object) -> str:
    events = getattr(trace, "events", [])
    llm = sum(1 for e in events if e.type.value == "llm_request")
    tools = sum(1 for e in events if e.type.value == "tool_call")
    text = f"status {trace.status.value}, {llm} LLM calls, {tools} tool calls"  # type: ignore[attr-defined]
    missing = trace.not_captured()  # type: ignore[attr-defined]
    partial = trace.partial()  # type: ignore[attr-defined]
    if missing:
        text += f"; {missing} recorded without content (replay cannot serve them)"
    if partial:
        text += f"; {partial} with partial input"
    return text


def register(app: typer.Typer) -> None:
    """Add the ``import`` command to ``app``."""
    app.command("import")(import_spans)
