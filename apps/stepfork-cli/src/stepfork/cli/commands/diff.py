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
    from stepfork.cli.output import exit_with_result, sanitize_text, shown
    from stepfork.trace import TraceError, TraceIntegrityError, load_verified_trace

    loaded = []
    for role, path in (("baseline", baseline), ("candidate", candidate)):
        try:  # each side on its own, so the message names the one that cannot be read
            loaded.append(load_verified_trace(path))
        except TraceIntegrityError as exc:  # the one line every command gives (issue 13)
            typer.echo(sanitize_text(str(exc)), err=True)
            raise typer.Exit(2) from None
        except (TraceError, OSError) as exc:
            typer.echo(f"Unreadable {role} bundle {shown(path)}: {sanitize_text(str(exc))}", err=True)
            raise typer.Exit(2) from None
    base, cand = loaded
    if base.agent_name != cand.agent_name:
        typer.echo(
            f"Warning: the two runs are of different agents (baseline {sanitize_text(base.agent_name)!r}, "
            f"candidate {sanitize_text(cand.agent_name)!r}); the comparison may not mean much.",
            err=True,
        )
    result = diff_traces(base, cand, ignore=ignore or (), strict=strict, show_ignored=show_ignored)
    # the paths as the user gave them (diff_traces of loaded traces has none)
    result = result.model_copy(
        update={
            "baseline": result.baseline.model_copy(update={"path": str(baseline)}),
            "candidate": result.candidate.model_copy(update={"path": str(candidate)}),
        }
    )
    exit_with_result(result, as_json=as_json)


def register(app: typer.Typer) -> None:
    """Add the ``diff`` command to ``app``."""
    app.command("diff")(diff)
