"""``stepfork diff BASELINE CANDIDATE [--json] [--ignore PATH]... [--strict] [--show-ignored]``
(spec/cli-reference.txt "diff"; volatile values: issue 12, stepfork.analysis.volatile).

Exit codes: 0 behaviour equivalent, 1 meaningful behavioural difference, 2 invalid or unreadable input.
"""

from __future__ import annotations

from pathlib import Path

import typer


def diff(
    baseline: Path = typer.Argument(..., help="Baseline .sftrace directory bundle."),
    candidate: Path = typer.Argument(..., help="Candidate .sftrace directory bundle."),
    as_json: bool = typer.Option(False, "--json", help="Emit machine-readable JSON (no Rich markup)."),
    ignore: list[str] | None = typer.Option(
        None,
        "--ignore",
        metavar="PATH",
        help="Also ignore differences at PATH ([*], *, ** wildcards). Repeatable.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Ignore nothing, not even provider-generated ids and timestamps."
    ),
    show_ignored: bool = typer.Option(False, "--show-ignored", help="List the ignored differences."),
) -> None:
    """Compare the behavior of two recorded agent runs."""
    from stepfork.analysis.diff import diff_traces
    from stepfork.cli.output import exit_with_result
    from stepfork.trace import TraceError

    try:
        result = diff_traces(
            baseline, candidate, ignore=ignore or (), strict=strict, show_ignored=show_ignored
        )
    except (TraceError, OSError) as exc:
        typer.echo(f"Unreadable bundle: {exc}", err=True)
        raise typer.Exit(2) from None
    exit_with_result(result, as_json=as_json)


def register(app: typer.Typer) -> None:
    """Add the ``diff`` command to ``app``."""
    app.command("diff")(diff)
