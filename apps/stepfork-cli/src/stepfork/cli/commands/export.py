"""``stepfork export PATH --pytest --entrypoint M:F [...]`` (spec/cli-reference.txt "export"), or
``stepfork export PATH [...] -- python agent.py ARGS`` (issue 11: a test that replays that program).

Exit 0 written; 1 when the destination exists or the write fails; 2 for bad input (non-pytest format,
missing entrypoint or one that is not ``MODULE:FUNCTION`` (replay's two lines), invalid mode (``manual``: a
test runs unattended; ``hybrid`` without ``--live-llm`` labels of the recording), strict
validation or integrity verification failed, bad expectation JSON, a ``--raise-as`` value that is not
``TYPE=MODULE:CLASS`` or two matching one recorded type, an entrypoint with a required parameter the
recorded run input gives no value for (replay's one line)) (notes section 4 table).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from stepfork.cli.options import (
    ALLOW_COMMAND_HELP,
    ALLOW_HOST_HELP,
    ALLOW_NETWORK_HELP,
    RAISE_AS_HELP,
    ignore_option,
    ordering_option,
)

# ExportError codes that exit 1; every other code is bad input, exit 2.
_EXIT_1_CODES = frozenset({"already_exists", "write_failed"})


def export(
    path: Annotated[Path, typer.Argument(help="Path to a .sftrace directory bundle.")],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="After --: the Python program the test replays (python SCRIPT ARGS...), instead of "
            "--entrypoint."
        ),
    ] = None,
    pytest_format: Annotated[
        bool,
        typer.Option(
            "--pytest/--no-pytest",
            help="Export a pytest test: the only format and the default (--pytest is still accepted).",
        ),
    ] = True,
    entrypoint: Annotated[
        str | None,
        typer.Option("--entrypoint", "-e", help="Trusted local MODULE:FUNCTION the generated test executes."),
    ] = None,
    expect_output: Annotated[
        Path | None,
        typer.Option("--expect-output", help="JSON file defining the expected regression outcome."),
    ] = None,
    expect_trajectory: Annotated[
        Path | None,
        typer.Option("--expect-trajectory", help="Reviewed JSON file defining tool and step assertions."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Destination test file. Default ./test_<trace>_regression.py."),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the output file if it already exists.")
    ] = False,
    mode: Annotated[
        str, typer.Option("--mode", "-m", help="Replay mode used by the generated test (any letter case).")
    ] = "frozen",
    allow_live_tool: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-live-tool", help="Embed authorization for a named tool in a live test. Repeatable."
        ),
    ] = None,
    live_llm: Annotated[
        list[str] | None,
        typer.Option(
            "--live-llm",
            help="With --mode hybrid: an LLM label (provider/model, as inspect shows it) the test runs "
            "live; the others stay frozen. Repeatable.",
        ),
    ] = None,
    raise_as: Annotated[
        list[str] | None,
        typer.Option("--raise-as", metavar="TYPE=MODULE:CLASS", help=RAISE_AS_HELP),
    ] = None,
    allow_network: Annotated[bool, typer.Option("--allow-network", help=ALLOW_NETWORK_HELP)] = False,
    allow_host: Annotated[
        list[str] | None, typer.Option("--allow-host", metavar="HOST[:PORT]", help=ALLOW_HOST_HELP)
    ] = None,
    allow_command: Annotated[
        list[str] | None, typer.Option("--allow-command", metavar="NAME", help=ALLOW_COMMAND_HELP)
    ] = None,
    ordering: Annotated[str, ordering_option()] = "auto",
    ignore: Annotated[list[str] | None, ignore_option()] = None,
    otlp: Annotated[
        bool, typer.Option("--otlp", help="Export the run as OTLP/JSON spans to --output (docs/import.md).")
    ] = False,
    otlp_endpoint: Annotated[
        str | None, typer.Option("--otlp-endpoint", help="Send the spans to this OTLP/HTTP traces URL.")
    ] = None,
    convention: Annotated[
        str, typer.Option("--convention", help="Span attributes for --otlp: genai or openinference.")
    ] = "genai",
) -> None:
    """Export an executable pytest regression test from a trace."""
    from stepfork.cli.guide import not_a_bundle_problem

    wrong = not_a_bundle_problem(path, "export")
    if wrong is not None:  # a test or script given where the bundle goes: one line, not a validation code
        from stepfork.cli.output import fail

        fail(wrong, 2)
    if otlp or otlp_endpoint is not None:  # issue 15: OTLP export (with --entrypoint: of a replay)
        from stepfork.cli.commands._export_otlp import export_otlp_command

        export_otlp_command(path, output, otlp_endpoint, convention, entrypoint, overwrite=overwrite)
        return
    from stepfork.analysis.export import (
        EXPORT_MODES,
        REFUSED_EXPORT_MODES,
        ExportError,
        entrypoint_form_problem,
        export_pytest_test,
        load_expectation_file,
        load_trajectory_file,
    )
    from stepfork.cli.options import (
        describe_raise_as,
        parse_allow_commands,
        parse_allow_hosts,
        parse_ignore,
        parse_ignore_output,
        parse_ordering,
        parse_raise_as,
    )
    from stepfork.cli.output import escape_controls, fail, sanitize, sanitize_text

    if not pytest_format:
        fail("v0.1 supports pytest export only (--pytest).", 2)
    allow_host = parse_allow_hosts(allow_host)
    allow_command = parse_allow_commands(allow_command)
    if command:
        entrypoint = _script_command(command, entrypoint, raise_as)
    elif not entrypoint:
        fail("An executable regression test needs --entrypoint MODULE:FUNCTION.", 2)
    problem = None if command else entrypoint_form_problem(entrypoint)
    if problem is not None:  # replay's two lines for the same entrypoint (spec "replay", Common errors)
        fail(f"Unable to resolve entrypoint.\n{problem}", 2)
    from stepfork.cli.guide import parse_mode

    if mode.casefold() in REFUSED_EXPORT_MODES:  # a mode a test cannot run unattended: its own reason
        fail(REFUSED_EXPORT_MODES[mode.casefold()], 2)
    mode = parse_mode(mode, "export")
    if mode not in EXPORT_MODES:  # guide.MODES is kept equal to it (tests/e2e/test_cli_guides.py)
        fail(f"Invalid replay mode {mode}.", 2)
    classes = parse_raise_as(raise_as)
    ordering = parse_ordering(ordering)
    ignored_paths = parse_ignore(ignore)
    try:
        expectation = load_expectation_file(expect_output) if expect_output is not None else None
        trajectory = load_trajectory_file(expect_trajectory) if expect_trajectory is not None else None
        result = export_pytest_test(
            trace_path=path,
            entrypoint=entrypoint,
            output_path=output,
            expectation=expectation,
            has_expectation=True if expect_output is not None else None,
            trajectory_expectation=trajectory,
            mode=mode,
            live_llms=live_llm or None,
            allow_live_tools=allow_live_tool or None,
            overwrite=overwrite,
            raise_as=classes,
            network="open" if allow_network else None,
            allow_hosts=allow_host or None,
            allow_commands=allow_command or None,
            ordering=ordering,
            ignore=ignored_paths,
            ignore_output=parse_ignore_output(ignore),
            command=command or None,
            check_call=True,  # refuse an entrypoint the recorded run input cannot call, as replay does
        )
    except ExportError as exc:
        fail(str(exc), 1 if exc.code in _EXIT_1_CODES else 2)

    typer.echo(f"Wrote {result.path}")
    typer.echo(f"Command:    {sanitize_text(' '.join(command))}" if command else f"Entrypoint: {entrypoint}")
    typer.echo(f"Mode:       {mode}")
    if live_llm:
        typer.echo(f"Live LLMs:  {', '.join(sorted(set(live_llm)))}")
    if ordering != "auto":
        typer.echo(f"Ordering:   {ordering}")
    if classes:
        typer.echo(f"Raise as:   {describe_raise_as(classes)}")
    if result.has_expectation:
        shown = escape_controls(json.dumps(sanitize(result.expectation), ensure_ascii=False))
        typer.echo(f"Expectation: {shown}")
    else:  # the test asserts no output (the earlier implementation's line; issue 32)
        typer.echo("Expectation: none")
    for key in result.raise_as_unmatched:
        typer.echo(
            f"Warning: --raise-as {key} matches no recorded failure that this test's replay serves; "
            "it is written all the same.",
            err=True,
        )
    if result.expectation_source == "recorded":
        typer.echo(
            "Warning: no --expect-output given; the test asserts the recorded run output, which passes "
            "against the code that produced the recording. Pass --expect-output to assert the corrected "
            "behavior.",
            err=True,
        )
    elif result.expectation_source == "none" and command:
        typer.echo(
            "Warning: no --expect-output given; the test checks that the program replays the recording. "
            "Pass --expect-output with the corrected output (the program's standard output, as JSON).",
            err=True,
        )
    elif result.expectation_source == "none":
        typer.echo(
            "Warning: no --expect-output given and the recorded run has no completed output to assert; the "
            "test checks that the entrypoint replays the recording and returns. Pass --expect-output with "
            "the corrected behavior.",
            err=True,
        )


def _script_command(command: list[str], entrypoint: str | None, raise_as: list[str] | None) -> str:
    """Check the script form (``-- python SCRIPT ARGS``) before anything is read: one line and exit 2 for
    a command that is not a Python program, a missing script, or options it cannot honour. Returns the
    empty entrypoint the exporter is given with a command."""
    from stepfork.cli.commands.record import check_script, python_target
    from stepfork.cli.output import fail

    if entrypoint:
        fail("give either --entrypoint MODULE:FUNCTION or -- python SCRIPT ARGS, not both", 2)
    if raise_as:  # a program's exceptions are its own: nothing maps a recorded failure into it
        fail("--raise-as is not supported with `-- python SCRIPT`; use --entrypoint", 2)
    found = python_target(command)
    if found is None:
        from stepfork.cli.guide import not_python_problem

        fail(
            "stepfork export BUNDLE -- python SCRIPT ARGS... exports a test of a Python program: "
            f"{not_python_problem(command)}",
            2,
        )
    check_script(found[1])
    _refuse_secrets(command)
    return ""


def _refuse_secrets(command: list[str]) -> None:
    """Refuse (one line, exit 2) a command holding a credential, before anything is read: the library's
    rule (:func:`stepfork.analysis.export.command_secret_problem`; CASES C5)."""
    from stepfork.analysis.export import command_secret_problem
    from stepfork.cli.output import fail

    problem = command_secret_problem(command)
    if problem is not None:
        fail(problem, 2)


def register(app: typer.Typer) -> None:
    """Add the ``export`` command to ``app``."""
    app.command("export")(export)
