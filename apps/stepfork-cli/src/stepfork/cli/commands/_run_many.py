"""``stepfork run TEST... | DIR [--shard K/N] [--receipts DIR] [--json]``: many exported tests, one receipt
per test and a summary (issue 17; :func:`stepfork.analysis.export.run_many`). Exit 0 every test passed, 1 a
test failed (or some could not execute), 2 none could execute or bad input (one line)."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn


def run_many_command(
    tests: list[Path],
    shard: str | None,
    receipts: Path | None,
    pytest_args: list[str],
    timeout_seconds: float | None,
    *,
    as_json: bool,
) -> NoReturn:
    """Run the tests, print the summary (or its JSON) and exit with its code."""
    from stepfork.analysis.export import RunInputError, parse_shard, run_many
    from stepfork.cli.output import exit_with_result, fail

    try:
        result = run_many(
            tests,
            shard=parse_shard(shard) if shard is not None else None,
            receipts_dir=receipts,
            pytest_args=pytest_args,
            timeout_seconds=timeout_seconds,
        )
    except RunInputError as exc:
        fail(str(exc), 2, error=exc.code)
    except OSError as exc:
        fail(f"cannot write a receipt into {receipts}: {exc}", 2, error="write_failed")
    exit_with_result(result, as_json=as_json)
