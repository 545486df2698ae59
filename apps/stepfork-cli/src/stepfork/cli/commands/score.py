"""``stepfork score TEST [--expect-output] [--bundle] [--json]`` (spec/cli-reference.txt "score").

Reads the exported test with ast only (never imports or runs it). Exit codes: 0 ``claim_pinned``,
1 ``run_pinned``, 2 cannot answer (no expectation, no recorded run, unreadable test or bundle). With
``--json`` such an error is also every command's JSON object on stdout, ``{"error", "message", "exit_code":
2, "path"}`` (``path``: the file concerned; :func:`stepfork.cli.output.with_json_errors`).
"""

from __future__ import annotations

from pathlib import Path

import typer


def score(
    test: Path = typer.Argument(..., help="Exported pytest regression test."),
    expect_output: Path | None = typer.Option(
        None, "--expect-output", help="Score this expectation instead of the one the test embeds."
    ),
    bundle: Path | None = typer.Option(
        None, "--bundle", help="Bundle to read the recorded run from. Default: the TRACE_PATH the test names."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the score as JSON."),
) -> None:
    """Score an exported expectation against a mutant battery derived from the recorded run."""
    from stepfork.analysis.score import ScoreError, score_test
    from stepfork.cli.guide import not_a_test_problem
    from stepfork.cli.output import exit_with_result, fail, sanitize_text

    typed = tuple(str(given) for given in (test, expect_output, bundle) if given is not None)
    problem = not_a_test_problem(test, "score")
    if problem is not None:
        fail(sanitize_text(problem, keep=typed), 2, error="not_a_test", extra={"path": str(test)})
    try:
        result = score_test(test, expect_output=expect_output, bundle=bundle)
    except ScoreError as exc:
        fail(sanitize_text(str(exc), keep=typed), 2, error=exc.code, extra={"path": exc.path})
    exit_with_result(result, as_json=as_json)


def register(app: typer.Typer) -> None:
    """Add the ``score`` command to ``app``."""
    app.command("score")(score)
