"""``stepfork diff BASELINE CANDIDATE [--json]`` (spec/cli-reference.txt "diff").

Exit codes: 0 behaviour equivalent, 1 meaningful behavioural difference, 2 invalid or unreadable input.
"""

from __future__ import annotations

from pathlib import Path

import typer


def diff(
    baseline: Path = typer.Argument(..., help="Baseline .sftrace directory bundle."),
    candidate: Path = typer.Argument(..., help="Candidate .sftrace directory bundle."),
    as_json: bool = typer.Option(False, "--json", help="Emit machine-readable JSON (no Rich markup)."),
) -> None:
    """Compare the behavior of two recorded agent runs."""
    from stepfork.analysis.diff import diff_traces
    from stepfork.cli.output import exit_with_result
    from stepfork.trace import TraceError, TraceIntegrityError

    try:
        result = diff_traces(baseline, candidate)
    except TraceIntegrityError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    except (TraceError, OSError) as exc:
        typer.echo(f"Unreadable bundle: {exc}", err=True)
        raise typer.Exit(2) from None
    exit_with_result(result, as_json=as_json)


def register(app: typer.Typer) -> None:
    """Add the ``diff`` command to ``app``."""
    app.command("diff")(diff)
