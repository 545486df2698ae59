"""``stepfork upload BUNDLE URL [--keep-spool] [--remove-local]``: upload a finished local bundle, e.g. the
spool of a run whose upload failed (issue 17; docs/remote.md).

A run recorded to a URL is spooled locally and uploaded when it ends; when that upload fails the spool is
kept and the failure logged with this command line. The bundle's files are uploaded first and
integrity.json last, and the bundle is read back from the URL with its integrity verified. Only then is the
local copy deleted, and only when it is a spool a recording left (under the spool directory:
``stepfork.trace._retention.is_spool``; ``--keep-spool`` keeps it) or ``--remove-local`` is given: any
other bundle is the user's and is kept. Exit 0 uploaded; 2 no such bundle, the bundle is not a finished
bundle (or fails its own integrity check), the URL is unusable or the extra is missing; 1 the store
refused a write or the read-back did not verify (the bundle on the URL stays incomplete; run the command
again).
"""

from __future__ import annotations

from typing import Annotated

import typer


def upload(
    spool: Annotated[
        str, typer.Argument(help="The local .sftrace bundle directory (e.g. a spool a recording left).")
    ],
    url: Annotated[str, typer.Argument(help="Destination URL, e.g. s3://bucket/runs/RUN.sftrace.")],
    keep_spool: Annotated[
        bool, typer.Option("--keep-spool", help="Keep the spool after the upload.")
    ] = False,
    remove_local: Annotated[
        bool,
        typer.Option(
            "--remove-local",
            help="Delete the local bundle after a verified upload even if it is not a spool.",
        ),
    ] = False,
) -> None:
    """Upload a local bundle (a spool a recording left) to object storage (integrity.json last)."""
    from pathlib import Path

    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace._files import remove_tree
    from stepfork.trace._retention import is_spool
    from stepfork.trace.errors import TraceStorageError
    from stepfork.trace.remote import fetched_bundle, upload_bundle, url_of

    if keep_spool and remove_local:
        fail("--keep-spool and --remove-local exclude each other.", 2)
    target = url_of(url)
    if target is None:
        fail(f"Not a URL: {url} (expected e.g. s3://bucket/runs/RUN.sftrace).", 2)
    if not target.rstrip("/").endswith(".sftrace"):
        fail(f"The destination must end with .sftrace: {target}", 2)
    local = Path(spool)
    if not local.is_dir():
        fail(
            f"Cannot upload {spool}: no such bundle" + ("" if not local.exists() else " (not a directory)"), 2
        )
    remove = remove_local or (is_spool(local) and not keep_spool)
    try:
        upload_bundle(spool, target)
    except TraceStorageError as exc:
        fail(f"Cannot upload {spool}: {sanitize_text(str(exc))}", 2)
    except OSError as exc:
        fail(f"Upload to {target} failed: {sanitize_text(str(exc))}", 1)
    try:
        with fetched_bundle(target):
            pass
    except (TraceStorageError, OSError) as exc:
        fail(
            f"Uploaded, but the bundle read back from {target} does not verify: {sanitize_text(str(exc))}", 1
        )
    if remove:
        remove_tree(local)
    typer.echo(
        f"Uploaded {spool} to {target}" + (" (local copy removed)" if remove else " (local copy kept)")
    )


def register(app: typer.Typer) -> None:
    """Add the ``upload`` command to ``app``."""
    app.command("upload")(upload)
