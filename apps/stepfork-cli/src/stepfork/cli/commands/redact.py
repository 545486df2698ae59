"""``stepfork redact BUNDLE -o OUT [--overwrite] [--json]``: write a redacted copy of a bundle (issue 14).

For bundles that ``stepfork validate`` warns about (``unredacted_secret``). The copy is redacted with the
current rules, re-hashed and gets a new integrity.json; the redactions made are listed (where and why,
never the value). Never in place. Exit codes: 0 the copy was written, 2 invalid input (unreadable or
tampered bundle, OUT exists without --overwrite, OUT is not a bundle directory, OUT overlaps BUNDLE).
With ``--json`` such an error is also every command's JSON object on stdout, ``{"error": <the bundle
error's code, or os_error>, "message", "exit_code": 2}`` (:func:`stepfork.cli.output.with_json_errors`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def redact(
    bundle: Annotated[Path, typer.Argument(help="Path to the .sftrace bundle to redact (never changed).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Path of the redacted .sftrace copy.")],
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace OUT if it is an existing bundle.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Write a redacted copy of a bundle with a new integrity.json."""
    import json

    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace.errors import TraceError
    from stepfork.trace.redact_copy import redact_bundle

    try:
        copy = redact_bundle(bundle, output, overwrite=overwrite)
    except (TraceError, OSError) as exc:
        code = getattr(exc, "code", None) or "os_error"
        if code == "already_exists":  # the library says overwrite=True; here the option is --overwrite
            message = sanitize_text(
                f"{output} already exists; pass --overwrite to replace it.", keep=(output,)
            )
            fail(message, 2, error=code)
        message = sanitize_text(str(exc), keep=(bundle, output))
        fail(message, 2, error=code)
    if as_json:
        typer.echo(json.dumps(copy.to_dict(), ensure_ascii=False))
        raise typer.Exit(0)
    count = len(copy.redactions)
    typer.echo(f"Redacted copy written: {sanitize_text(str(copy.output))}")
    typer.echo(f"{count} redaction{'' if count == 1 else 's'} made.")
    for item in copy.redactions:
        where = "manifest.json" if item.line is None else f"events.jsonl:{item.line}"
        typer.echo(f"  {where} {sanitize_text(item.event_id)} {sanitize_text(item.path)} ({item.reason})")


def register(app: typer.Typer) -> None:
    """Add the ``redact`` command to ``app``."""
    app.command("redact")(redact)
