"""``stepfork run TEST [--bundle] [--receipt [--overwrite]] [--json] [--pytest-arg]... [--timeout-seconds]``
(spec "run").

Exit 0 passed, 1 failed (a caught regression), 2 could_not_execute (the check never ran), and 2 with one
line, before anything runs, for bad input: a missing test, a bad option, or a refused ``--receipt`` path
(the test file, inside the bundle, or an existing file that is not a receipt without ``--overwrite``;
docs/decisions.md). With ``--json`` such a line is also every command's error object on stdout,
``{"error": <code>, "message", "exit_code": 2}`` (:func:`stepfork.cli.output.with_json_errors`).

Several tests, a directory, ``--shard K/N`` or ``--receipts DIR`` run many tests in turn, one receipt each,
and print a summary (:mod:`stepfork.cli.commands._run_many`, issue 17).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

_VERDICT_LINES = {
    "passed": "PASSED",
    "failed": "FAILED",
    "could_not_execute": "COULD NOT EXECUTE",
}


def run(
    tests: Annotated[
        list[Path],
        typer.Argument(
            metavar="TEST...",
            help="The pytest file stepfork export wrote; several files or directories run each in turn.",
        ),
    ],
    bundle: Annotated[
        Path | None,
        typer.Option(
            "--bundle", help="Name the .sftrace bundle instead of reading TRACE_PATH from the test."
        ),
    ] = None,
    receipt: Annotated[
        Path | None, typer.Option("--receipt", help="Write a JSON receipt of what the runner observed.")
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Let --receipt replace an existing file that is not a Stepfork receipt "
            "(an earlier receipt is always replaced).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the receipt to stdout.")] = False,
    pytest_arg: Annotated[
        list[str] | None,
        typer.Option("--pytest-arg", help="Extra argument for the pytest subprocess. Repeat per argument."),
    ] = None,
    timeout_seconds: Annotated[
        float | None,
        typer.Option(
            "--timeout-seconds", help="Stop the check after this long and report could_not_execute."
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option("--shard", metavar="K/N", help="Run only shard K of N of the tests (deterministic)."),
    ] = None,
    receipts: Annotated[
        Path | None,
        typer.Option("--receipts", help="With several tests: write one receipt per test into DIR."),
    ] = None,
) -> None:
    """Run an exported regression test and report the verdict (--receipt writes it as JSON)."""
    from stepfork.analysis.export import RunInputError, run_exported_test
    from stepfork.cli.guide import not_a_test_problem
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace._outputs import is_bundle_dir

    for item in tests:  # a bundle given where a test belongs: say so, with the export line (issue 13)
        if is_bundle_dir(item):
            why = not_a_test_problem(item, "run") or f"{item} is a bundle"
            fail(sanitize_text(why, keep=(item,)), 2, error="not_a_test")
    if len(tests) != 1 or tests[0].is_dir() or shard is not None or receipts is not None:
        from stepfork.cli.commands._run_many import run_many_command

        if bundle is not None or receipt is not None or overwrite:
            fail("--bundle, --receipt and --overwrite name one test; with several use --receipts DIR.", 2)
        run_many_command(tests, shard, receipts, pytest_arg or [], timeout_seconds, as_json=as_json)
    test = tests[0]
    problem = not_a_test_problem(test, "run")
    if problem is not None:
        fail(sanitize_text(problem, keep=(test,)), 2, error="not_a_test")

    try:
        result = run_exported_test(
            test,
            bundle=bundle,
            receipt_path=receipt,
            pytest_args=pytest_arg or (),
            timeout_seconds=timeout_seconds,
            overwrite=overwrite,
        )
    except RunInputError as exc:
        fail(str(exc), 2, error=exc.code)
    except OSError as exc:
        fail(f"cannot write the receipt {receipt}: {exc}", 2, error="write_failed")
    if as_json:
        typer.echo(result.to_json(), nl=False)
        raise typer.Exit(result.exit_code)

    counts = result.counts

    def short(value: str | None) -> str:
        return value[:16] if value else "-"

    rows = [
        ("Test", result.test),
        ("Test sha256", short(result.test_sha256)),
        ("Bundle", result.bundle or "-"),
        ("Bundle digest", short(result.bundle_digest)),
        ("pytest exit", "-" if result.exit_status is None else str(result.exit_status)),
        (
            "Collected",
            f"{counts.get('tests', 0)} test(s), {counts.get('failures', 0)} failure(s), "
            f"{counts.get('errors', 0)} error(s), {counts.get('skipped', 0)} skipped",
        ),
    ]
    for label, value in rows:
        typer.echo(f"{label:<17}{value}")
    typer.echo("")
    from stepfork.cli.colour import echo

    echo(f"Verdict: {_VERDICT_LINES[result.verdict]}")
    if result.verdict == "could_not_execute":
        typer.echo(f"Reason: {result.reason}")
        typer.echo(result.detail)
        typer.echo("The check did not execute, so this run says nothing about the agent's behaviour.")
    elif result.verdict == "failed":
        typer.echo(result.detail)
    if receipt is not None:
        typer.echo(f"Receipt: {receipt}")
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    """Add the ``run`` command to ``app``."""
    app.command("run")(run)
