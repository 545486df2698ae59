"""``stepfork replay PATH --entrypoint M:F [--mode] [--allow-live-tool]... [--raise-as]... [--verbose]``
(spec "replay").

The library (:func:`stepfork.replay.outcome.replay_entrypoint`) runs the replay and computes the report;
this module renders it. Exit 0 no divergence (or a reproduced recorded failure), 1 divergence, 2 invalid
mode, unreadable trace, unresolvable entrypoint or ``--raise-as`` class (one that is not an ``Exception``
subclass included), 130 Ctrl-C (``Interrupted.``, printed by :mod:`stepfork.cli.app`). In ``manual`` mode
each call is put to the user on the terminal; with a standard input that is not a terminal the command
refuses before anything runs. ``--raise-as`` classes are imported like the entrypoint (named by the user,
never by the bundle); the report judges what the entrypoint then does by the usual rules
(docs/decisions.md).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from stepfork.cli.guide import MODES
from stepfork.cli.htmlout import HTML_HELP
from stepfork.cli.options import (
    ALLOW_COMMAND_HELP,
    ALLOW_HOST_HELP,
    ALLOW_NETWORK_HELP,
    RAISE_AS_HELP,
    ignore_option,
    ordering_option,
)
from stepfork.cli.replay_report import (
    ask,
    emit_report_json,
    fail_for_error,
    header_lines,
    os_exit_line,
    render,
)

CLI_MODES = MODES["replay"]


def replay(
    path: Annotated[Path, typer.Argument(help="Path to a .sftrace directory bundle.")],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="After --: the Python program to replay (python SCRIPT ARGS...), instead of --entrypoint."
        ),
    ] = None,
    entrypoint: Annotated[
        str | None,
        typer.Option(
            "--entrypoint", "-e", help="Trusted local MODULE:FUNCTION to execute under replay. Required."
        ),
    ] = None,
    mode: Annotated[str, typer.Option("--mode", "-m", help="Replay mode (any letter case).")] = "frozen",
    allow_live_tool: Annotated[
        list[str] | None,
        typer.Option("--allow-live-tool", help="Authorize a named tool to execute in live mode. Repeatable."),
    ] = None,
    raise_as: Annotated[
        list[str] | None,
        typer.Option("--raise-as", metavar="TYPE=MODULE:CLASS", help=RAISE_AS_HELP),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Show full diagnostic fingerprints instead of abbreviated ones.")
    ] = False,
    html: Annotated[Path | None, typer.Option("--html", metavar="FILE", help=HTML_HELP)] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the --html file if it exists.")
    ] = False,
    allow_network: Annotated[bool, typer.Option("--allow-network", help=ALLOW_NETWORK_HELP)] = False,
    allow_host: Annotated[
        list[str] | None, typer.Option("--allow-host", metavar="HOST[:PORT]", help=ALLOW_HOST_HELP)
    ] = None,
    allow_command: Annotated[
        list[str] | None, typer.Option("--allow-command", metavar="NAME", help=ALLOW_COMMAND_HELP)
    ] = None,
    ordering: Annotated[str, ordering_option()] = "auto",
    ignore: Annotated[list[str] | None, ignore_option()] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the replay report as JSON (ReplayOutcome.to_dict()); what the agent prints goes to "
            "stderr.",
        ),
    ] = False,
) -> None:
    """Execute a trusted entrypoint with dependencies replayed from a trace."""
    from stepfork.cli import htmlout
    from stepfork.cli.guide import parse_mode
    from stepfork.cli.options import (
        parse_allow_commands,
        parse_allow_hosts,
        parse_ignore,
        parse_ignore_output,
        parse_ordering,
        parse_raise_as,
    )
    from stepfork.cli.output import fail

    mode = parse_mode(mode, "replay")
    allow_host = parse_allow_hosts(allow_host)
    allow_command = parse_allow_commands(allow_command)
    if command and entrypoint:
        fail("give either --entrypoint MODULE:FUNCTION or -- python SCRIPT ARGS, not both", 2)
    if command:
        refused = [name for name, given in (("--html", html), ("--raise-as", raise_as)) if given]
        if refused:
            fail(f"{refused[0]} is not supported with `-- python SCRIPT`; use --entrypoint", 2)
        options = {
            "mode": mode,
            "network": "open" if allow_network else "",
            "allow_hosts": allow_host or [],
            "allow_commands": allow_command or [],
            "allow_live_tools": allow_live_tool or [],
            "ordering": parse_ordering(ordering),
            "ignore": parse_ignore(ignore),
            "ignore_output": parse_ignore_output(ignore),
            "verbose": verbose,
            "json": as_json,
        }
        _replay_program(path, command, options)
    if not entrypoint:
        fail(
            "Unable to resolve entrypoint.\nmissing --entrypoint MODULE:FUNCTION or -- python SCRIPT ARGS",
            2,
        )
    classes = parse_raise_as(raise_as)
    htmlout.check_target(html, overwrite=overwrite)
    ordering = parse_ordering(ordering)
    ignored_paths = parse_ignore(ignore)
    approve = None
    if mode == "manual":
        if not sys.stdin.isatty():
            fail("Manual replay mode asks for approval on a terminal; standard input is not a terminal.", 2)
        approve = ask

    from stepfork.cli.agent_exit import os_exit_reported
    from stepfork.cli.output import agent_output_to_stderr
    from stepfork.replay.outcome import replay_entrypoint

    # On a terminal the header shows before the entrypoint runs, and a spinner while it runs (stderr);
    # piped, the report prints in one piece at the end (and nothing on stdout when the command refuses).
    interactive = sys.stdout.isatty() and not as_json
    network_text = _network_text(mode, allow_network, allow_host, allow_command)
    # printed before the run on a terminal: the agent's name is read from the manifest now (the spec's order)
    agent = _agent_name(path) if interactive else None
    header = header_lines(path, entrypoint, mode, classes, network_text, agent)
    from stepfork.cli import app
    from stepfork.replay.network import network_for

    if app.OWN_PROCESS and network_for(mode, "open" if allow_network else None) == "sealed":
        # sealed from before the entrypoint's import until this process exits: a thread the import starts
        # reaches nothing between the import and the session either (docs/replay.md, "The seal's rules")
        from stepfork.replay.network import seal_process

        seal_process()
    if interactive:
        typer.echo("\n".join(header))
    try:
        with (
            _raise_as_warnings_as_lines(),
            _spinner(enabled=mode != "manual"),
            os_exit_reported(os_exit_line, 2),
            agent_output_to_stderr(as_json),  # the agent's prints never into the JSON document
        ):
            outcome = replay_entrypoint(
                path,
                entrypoint,
                mode=mode,
                allow_live_tools=allow_live_tool or None,
                approve=approve,
                raise_as=classes,
                network="open" if allow_network else None,
                allow_hosts=allow_host or None,
                allow_commands=allow_command or None,
                ordering=ordering,
                ignore=ignored_paths,
                ignore_output=parse_ignore_output(ignore),
            )
    except Exception as exc:
        fail_for_error(exc, path)
    from stepfork.cli.scriptrun import keep_sealed

    if app.OWN_PROCESS:  # threads the agent left running stay sealed until this process exits
        keep_sealed(outcome)
    for key in outcome.raise_as_unmatched:
        typer.echo(f"Warning: --raise-as {key} matches no recorded failure in this replay.", err=True)
    if as_json:
        emit_report_json(outcome)
    else:
        render(outcome, [] if interactive else header, verbose=verbose)
    if html is not None:
        from stepfork.analysis.view import write_replay_view

        htmlout.write(html, lambda: write_replay_view(outcome, path, html, overwrite=overwrite))
    raise typer.Exit(outcome.exit_code)


def _agent_name(path: Path) -> str | None:
    """The manifest's agent name of the local bundle ``path`` for the header printed before the run, or
    None when it cannot be read (the replay then says why) or ``path`` is not a local directory."""
    if not path.is_dir():
        return None
    from stepfork.trace.reading import open_bundle

    try:
        with open_bundle(path) as opened:
            return opened.manifest.agent_name
    except Exception:
        return None


def _replay_program(path: Path, command: list[str], options: dict[str, Any]) -> NoReturn:
    """``stepfork replay BUNDLE -- python agent.py ARGS``: the program runs in its interpreter under the
    replay (:mod:`stepfork.cli.scriptrun`, given ``options`` as JSON), which prints the report; exits
    with its status. The bundle (integrity first, as every replay), the script and manual mode's
    terminal are checked here, before the program starts."""
    import json

    from stepfork.cli.commands.record import check_script, python_target, run_child
    from stepfork.cli.output import fail
    from stepfork.trace import load_verified_trace

    found = python_target(command)
    if found is None:
        from stepfork.cli.guide import not_python_problem

        fail(
            "stepfork replay BUNDLE -- python SCRIPT ARGS... replays a Python program: "
            f"{not_python_problem(command)}",
            2,
        )
    interpreter, target = found
    if options["mode"] == "manual" and not sys.stdin.isatty():
        fail("Manual replay mode asks for approval on a terminal; standard input is not a terminal.", 2)
    try:
        load_verified_trace(path)
    except Exception as exc:
        fail_for_error(exc, path)
    check_script(target)
    raise typer.Exit(run_child(interpreter, ["replay", str(path), json.dumps(options)], target))


def _network_text(mode: str, allow_network: bool, allow_hosts: list[str], allow_commands: list[str]) -> str:
    """The header's Network line before the run: the policy the session will take (the mode's default
    unless ``--allow-network``), the hosts it lets through (already normalized) and the programs it lets
    start."""
    from stepfork.replay.network import network_for
    from stepfork.replay.network_notes import network_line

    return network_line(network_for(mode, "open" if allow_network else None), allow_hosts, (), allow_commands)


@contextmanager
def _spinner(*, enabled: bool) -> Iterator[None]:
    """A rich spinner on stderr while the entrypoint runs, when stderr is a terminal (never in manual
    mode, whose prompts share the terminal)."""
    if not enabled or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status("Replaying..."):
        yield


@contextmanager
def _raise_as_warnings_as_lines() -> Iterator[None]:
    """Print each RaiseAsWarning (a ``--raise-as`` class that could not be applied as asked) as one
    ``Warning:`` line on stderr instead of Python's two-line warning; other warnings are untouched."""
    import warnings

    from stepfork.cli.output import sanitize_text
    from stepfork.replay.raise_as import RaiseAsWarning

    shown = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, RaiseAsWarning):
            typer.echo(f"Warning: {sanitize_text(str(message))}", err=True)
        else:
            shown(message, category, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("always", RaiseAsWarning)
        warnings.showwarning = show
        yield


def register(app: typer.Typer) -> None:
    """Add the ``replay`` command to ``app``."""
    app.command("replay")(replay)
