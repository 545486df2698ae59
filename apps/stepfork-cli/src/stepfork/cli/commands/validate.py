"""``stepfork validate PATH [--partial] [--verify-integrity]`` (spec/cli-reference.txt "validate").

Exit codes (interop/REFERENCE-NOTES.md section 4 table): 3 for --verify-integrity on a legacy bundle
(checked first; a directory without manifest.json is no bundle, so not a legacy one), 2 for an
unreadable bundle or unusable integrity metadata, 1 for other issues, 0 valid.

Every verdict is the command's result and goes to stdout, a failing one included (issue 32: ``stepfork
validate x | tee log`` and scripts reading stdout saw nothing of a failure); only click's usage errors go
to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def validate(
    path: Annotated[Path, typer.Argument(help="Path to a .sftrace directory bundle.")],
    partial: Annotated[
        bool,
        typer.Option("--partial", help="Allow incomplete in-progress traces, skipping run_start checks."),
    ] = False,
    verify_integrity: Annotated[
        bool,
        typer.Option(
            "--verify-integrity", help="Verify per-event payload hashes and bundle integrity metadata."
        ),
    ] = False,
) -> None:
    """Validate a .sftrace bundle."""
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace.validation import validate_bundle

    # a path missing manifest.json or another required file (a mistyped path, an empty directory) is not
    # legacy (validate_bundle): its missing_file issues below, exit 2
    result = validate_bundle(path, strict=not partial, verify_integrity=verify_integrity)
    if verify_integrity and result.legacy:
        if result.incomplete:  # a recording still going or killed: integrity.json is written last
            fail(
                "Bundle has no integrity.json metadata. (UNVERIFIED (unfinished recording: status "
                "running; integrity.json is written when the run ends))",
                3,
                result=True,
            )
        fail("Bundle has no integrity.json metadata. (UNVERIFIED (legacy bundle))", 3, result=True)
    from stepfork.cli.colour import echo

    for check in result.checks:
        echo(f"{'✓' if check.passed else '✗'} {check.name}")
    for warning in result.warnings:
        typer.echo(f"warning: {warning.code}: {sanitize_text(warning.message)}")
    for code, message in _import_warnings(path):  # a bundle made by `stepfork import` (issue 15)
        typer.echo(f"warning: {code}: {message}")
    typer.echo("")
    if result.valid:
        typer.echo("Validation passed.")
        raise typer.Exit(0)
    count = len(result.issues)
    typer.echo(f"Validation failed: {count} issues.")  # the spec's wording, whatever N
    for issue in result.issues:
        where = [part for part in (issue.location, _step(issue.step), issue.event_id) if part]
        suffix = f" ({', '.join(where)})" if where else ""
        typer.echo(f"  {issue.code}: {sanitize_text(issue.message)}{suffix}")
    raise typer.Exit(2 if result.unreadable else 1)


def _import_warnings(path: Path) -> list[tuple[str, str]]:
    from stepfork.replay.imported import IMPORT_EXTENSION, import_warnings
    from stepfork.trace.bundle import read_extension
    from stepfork.trace.errors import TraceError

    try:
        return import_warnings(read_extension(path, IMPORT_EXTENSION))
    except (TraceError, ValueError, OSError):
        return []


def _step(step: int | None) -> str | None:
    return None if step is None else f"step {step}"


def register(app: typer.Typer) -> None:
    """Add the ``validate`` command to ``app``."""
    app.command("validate")(validate)
