"""``stepfork fork PATH --step N --entrypoint M:F --output OUT [...]`` (issue 5, "fork").

Calls before step N are served from the recording, calls from N on run live (tools only with
--allow-live-tool); the whole run is recorded into OUT. The network is sealed while the run is frozen (as
in a frozen replay) and opens at the fork point; --allow-network, --allow-host and --allow-command as
replay's. Exit codes: 0 the forked run completed, 1 the entrypoint raised (the failed run is still recorded
in OUT; a child process the seal refused before the fork point is such a failure, its error naming
--allow-command) or ended the process with ``os._exit`` (OUT holds the run up to it, unfinished: one line,
and with ``--json`` the error object ``agent_exited``), 2 invalid input (unreadable trace, unknown step,
bad --override, a malformed --allow-host or --allow-command, unresolvable entrypoint, OUT exists without
--overwrite); with ``--json`` such an error is also every command's error object on stdout, ``{"error":
<ForkError code>, "message", "exit_code": 2}`` (:func:`stepfork.cli.output.with_json_errors`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stepfork.cli.options import ALLOW_COMMAND_HELP, ALLOW_HOST_HELP, ALLOW_NETWORK_HELP, ordering_option


def fork(
    path: Path = typer.Argument(..., help="Path to the .sftrace bundle to fork."),
    step: int = typer.Option(..., "--step", help="Fork at this event step (as `inspect` shows it)."),
    entrypoint: str = typer.Option(..., "--entrypoint", "-e", help="Agent entrypoint as MODULE:FUNCTION."),
    output: Path = typer.Option(..., "--output", "-o", help="Path of the new .sftrace bundle."),
    live_llm: list[str] = typer.Option(
        [], "--live-llm", help="LLM label allowed live after the fork. Repeat."
    ),
    allow_live_tool: list[str] = typer.Option(
        [], "--allow-live-tool", help="Tool whose body may run after the fork. Repeat for each tool."
    ),
    override: list[str] = typer.Option(
        [], "--override", help="STEP=JSONFILE: replace the recorded output of a step before the fork. Repeat."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the output bundle (--output) if it exists."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ordering: Annotated[str, ordering_option()] = "auto",
    allow_network: Annotated[bool, typer.Option("--allow-network", help=ALLOW_NETWORK_HELP)] = False,
    allow_host: Annotated[
        list[str] | None, typer.Option("--allow-host", metavar="HOST[:PORT]", help=ALLOW_HOST_HELP)
    ] = None,
    allow_command: Annotated[
        list[str] | None, typer.Option("--allow-command", metavar="NAME", help=ALLOW_COMMAND_HELP)
    ] = None,
) -> None:
    """Fork a recorded run at a step: frozen before it, live from it, recorded into a new bundle."""
    from stepfork.cli.options import parse_allow_commands, parse_allow_hosts, parse_ordering

    allow_host = parse_allow_hosts(allow_host)
    allow_command = parse_allow_commands(allow_command)
    ordering = parse_ordering(ordering)
    from stepfork.analysis.forking import ForkError
    from stepfork.analysis.forking import fork as run_fork
    from stepfork.cli.output import agent_output_to_stderr, exit_with_result, fail
    from stepfork.trace import loads_json

    overrides: dict[int, object] = {}
    for item in override:
        key, sep, file = item.partition("=")
        try:
            if not sep or not key.strip().lstrip("-").isdigit():
                raise ValueError("expected STEP=JSONFILE")
            overrides[int(key)] = loads_json(Path(file).read_bytes())
        except (OSError, ValueError) as exc:
            fail(f"Invalid --override {item}: {exc}", 2, error="invalid_override")
    from stepfork.cli.agent_exit import os_exit_reported

    def exited(status: int) -> str:
        return (
            f"The agent called os._exit({status}) during the forked run, which ended the process: "
            f"{output} holds the run up to that call, unfinished (stepfork validate --partial reads it)."
        )

    try:
        with (
            os_exit_reported(exited, 1, json_error="agent_exited" if as_json else None, result=True),
            agent_output_to_stderr(as_json),  # the agent's prints never into the JSON document
        ):
            result = run_fork(
                path,
                step=step,
                entrypoint=entrypoint,
                output=output,
                live_llms=live_llm,
                allow_live_tools=allow_live_tool,
                overrides=overrides,
                overwrite=overwrite,
                ordering=ordering,
                network="open" if allow_network else None,
                allow_hosts=allow_host or None,
                allow_commands=allow_command or None,
            )
    except ForkError as exc:
        fail(str(exc), 2, error=exc.code)
    exit_with_result(result, as_json=as_json)


def register(app: typer.Typer) -> None:
    """Add the ``fork`` command to ``app``."""
    app.command("fork")(fork)
