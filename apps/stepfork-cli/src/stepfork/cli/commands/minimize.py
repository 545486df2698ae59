"""``stepfork minimize PATH --entrypoint M:F [...]`` (spec/cli-reference.txt "minimize").

Exit codes: 0 a valid minimal trace was saved; 1 no failure detected or minimization error; 2 invalid input,
unreadable trace or unresolvable entrypoint. The progress display (rich) lives here, never in the library.
"""

from __future__ import annotations

from pathlib import Path

import typer


def minimize(
    path: Path = typer.Argument(..., help="Path to the .sftrace directory bundle to minimize."),
    entrypoint: str = typer.Option(..., "--entrypoint", "-e", help="Agent entrypoint as MODULE:FUNCTION."),
    expect_output: Path | None = typer.Option(
        None, "--expect-output", help="JSON file with expected output for comparison."
    ),
    mode: str = typer.Option(
        "frozen", "--mode", "-m", help="Replay mode: frozen, live, forbidden, manual, derived."
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Path for the minimized .sftrace bundle. Default: <path>-minimized.sftrace.",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Overwrite the output bundle if it exists."),
    timeout: float = typer.Option(30.0, "--timeout", help="Timeout in seconds for each replay attempt."),
    attempts: int = typer.Option(
        1, "--attempts", help="Number of attempts per subset test (for nondeterminism)."
    ),
) -> None:
    """Minimize a failing trace to the smallest reproducible subset."""
    import sys

    from stepfork.analysis.minimize import MinimizeError, minimize_trace

    typer.echo("Stepfork Minimize\n")
    typer.echo(f"Original trace:  {path}")
    try:
        from stepfork.trace import Trace

        trace = Trace.load(path)
        typer.echo(f"Agent:           {trace.agent_name}")
        typer.echo(f"Events:          {len(trace.events)}")
    except Exception as exc:
        typer.echo(f"Unreadable trace: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"Entrypoint:      {entrypoint}")
    typer.echo(f"Mode:            {mode}\n")

    status = None
    if sys.stderr.isatty():
        from rich.console import Console

        status = Console(stderr=True).status("Detecting failure signature...")
        status.start()
    seen: set[str] = set()

    def progress(stage: str, replays: int) -> None:
        if stage not in seen:
            seen.add(stage)
            if stage == "detect":
                typer.echo("Detecting failure signature...")
            elif stage == "search":
                typer.echo("Minimizing trace...")
        if status is not None:
            status.update(f"{stage}: {replays} replay(s)")

    try:
        result = minimize_trace(
            path,
            entrypoint,
            expect_output=expect_output,
            mode=mode,
            output=output,
            overwrite=overwrite,
            timeout=timeout,
            attempts=attempts,
            progress=progress,
        )
    except MinimizeError as exc:
        if status is not None:
            status.stop()
        typer.echo(str(exc), err=True)
        raise typer.Exit(exc.exit_code) from None
    if status is not None:
        status.stop()
    typer.echo("")
    typer.echo(str(result))
    raise typer.Exit(0)


def register(app: typer.Typer) -> None:
    """Add the ``minimize`` command to ``app``."""
    app.command("minimize")(minimize)
