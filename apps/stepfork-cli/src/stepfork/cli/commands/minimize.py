"""``stepfork minimize PATH --entrypoint M:F [...]`` (spec/cli-reference.txt "minimize").

Exit codes: 0 a valid minimal trace was saved; 1 no failure detected (an original replay the seal refused,
``network_sealed`` or ``child_process_refused``, included: one line naming --allow-host / --allow-command)
or minimization error; 2 invalid input (a refused mode, an --output that is the input bundle, a malformed
--allow-host or --allow-command), unreadable trace or unresolvable entrypoint. ``--allow-network``,
``--allow-host`` and ``--allow-command`` hold for every attempt; the header's ``Network:`` line says what
they opened. The
progress display (rich) lives here, never in the library. ``--json`` prints only the result (or every
command's error object, ``{"error", "message", "exit_code"}``: :func:`stepfork.cli.output.with_json_errors`)
on stdout; ``--clean-replay`` is ``minimize_trace(clean_replay=True)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stepfork.cli.htmlout import HTML_HELP
from stepfork.cli.options import ALLOW_COMMAND_HELP, ALLOW_HOST_HELP, ALLOW_NETWORK_HELP, ordering_option


def minimize(
    path: Path = typer.Argument(..., help="Path to the .sftrace directory bundle to minimize."),
    entrypoint: str = typer.Option(..., "--entrypoint", "-e", help="Agent entrypoint as MODULE:FUNCTION."),
    expect_output: Path | None = typer.Option(
        None, "--expect-output", help="JSON file with expected output for comparison."
    ),
    mode: str = typer.Option(
        "frozen",
        "--mode",
        "-m",
        help="Replay mode, any letter case (forbidden, manual and derived are refused: docs/minimize.md).",
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Path for the minimized .sftrace bundle. Default: PATH with -minimized before .sftrace.",
    ),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        help="Overwrite the output bundle if it exists, and an earlier HTML report at --html (never "
        "another file).",
    ),
    timeout: float = typer.Option(30.0, "--timeout", help="Timeout in seconds for each replay attempt."),
    attempts: int = typer.Option(
        1, "--attempts", help="Number of attempts per subset test (for nondeterminism)."
    ),
    clean_replay: bool = typer.Option(
        False,
        "--clean-replay",
        help="Keep every call the agent still makes, so the minimized bundle replays without divergence "
        "(as the original does). Default: the same failure suffices.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    html: Path | None = typer.Option(None, "--html", metavar="FILE", help=HTML_HELP),
    ordering: Annotated[str, ordering_option()] = "auto",
    allow_network: Annotated[bool, typer.Option("--allow-network", help=ALLOW_NETWORK_HELP)] = False,
    allow_host: Annotated[
        list[str] | None, typer.Option("--allow-host", metavar="HOST[:PORT]", help=ALLOW_HOST_HELP)
    ] = None,
    allow_command: Annotated[
        list[str] | None, typer.Option("--allow-command", metavar="NAME", help=ALLOW_COMMAND_HELP)
    ] = None,
) -> None:
    """Minimize a failing trace to the smallest reproducible subset."""
    import json
    import sys

    from stepfork.cli.options import parse_allow_commands, parse_allow_hosts, parse_ordering
    from stepfork.cli.output import agent_output_to_stderr, fail, sanitize_text, shown

    allow_host = parse_allow_hosts(allow_host)
    allow_command = parse_allow_commands(allow_command)
    ordering = parse_ordering(ordering)

    from stepfork.analysis.minimize import MinimizeError, check_options, minimize_trace

    def say(text: str) -> None:
        if not as_json:  # stdout holds the JSON document alone
            typer.echo(text)

    if mode.casefold() in ("frozen", "live", "forbidden", "manual", "derived"):
        mode = mode.casefold()  # any letter case; the library refuses the last three with its reasons
    else:
        from stepfork.cli.guide import parse_mode

        mode = parse_mode(mode, "minimize")  # an unknown mode: the choices and the closest one, exit 2

    from stepfork.cli import htmlout

    typed = tuple(str(given) for given in (path, shown(path), output, expect_output) if given is not None)
    htmlout.check_target(html, overwrite=overwrite, pages_only=True)  # --overwrite is the bundle's too
    try:  # a refused option is one line, before the header (spec "minimize" lists modes it cannot run)
        check_options(
            path,
            mode=mode,
            output=output,
            overwrite=overwrite,
            timeout=timeout,
            attempts=attempts,
            ordering=ordering,
            network="open" if allow_network else None,
        )
    except MinimizeError as exc:
        fail(sanitize_text(str(exc), keep=typed), exc.exit_code, error=exc.code)
    say("Stepfork Minimize\n")
    say(f"Original trace:  {shown(path)}")
    try:
        from stepfork.trace import TraceIntegrityError, load_verified_trace

        trace = load_verified_trace(path)
        say(f"Agent:           {trace.agent_name}")
        say(f"Events:          {len(trace.events)}")
    except TraceIntegrityError as exc:
        fail(sanitize_text(str(exc), keep=typed), 2, error="integrity_mismatch")
    except Exception as exc:
        fail(f"Unreadable trace: {sanitize_text(str(exc), keep=typed)}", 2, error="unreadable_trace")
    say(f"Entrypoint:      {entrypoint}")
    say(f"Mode:            {mode}")
    if allow_network or allow_host or allow_command:  # what every attempt's seal lets through
        from stepfork.replay.network import network_for
        from stepfork.replay.network_notes import network_line

        policy = network_for(mode, "open" if allow_network else None)
        say(f"Network:         {sanitize_text(network_line(policy, allow_host, (), allow_command))}")
    say("")

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
                say("Detecting failure signature...")
            elif stage == "search":
                say("Minimizing trace...")
        if status is not None:
            status.update(f"{stage}: {replays} replay(s)")

    try:
        with agent_output_to_stderr(as_json):  # the agent's prints never into the JSON document
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
                clean_replay=clean_replay,
                ordering=ordering,
                network="open" if allow_network else None,
                allow_hosts=allow_host or None,
                allow_commands=allow_command or None,
            )
    except MinimizeError as exc:
        if status is not None:
            status.stop()
        # exit 1 (no failure to keep, not reproduced) is minimize's finding, on stdout; exit 2 bad input
        fail(sanitize_text(str(exc), keep=typed), exc.exit_code, error=exc.code, result=exc.exit_code == 1)
    if status is not None:
        status.stop()
    if as_json:
        typer.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        typer.echo("")
        typer.echo(str(result))
    if html is not None:
        from stepfork.analysis.view import write_minimize_view

        htmlout.write(html, lambda: write_minimize_view(result, html, overwrite=overwrite))
    raise typer.Exit(0)


def register(app: typer.Typer) -> None:
    """Add the ``minimize`` command to ``app``."""
    app.command("minimize")(minimize)
