"""``stepfork upload SPOOL_DIR URL``: finish the upload of a bundle a recorder spooled (issue 17).

A run recorded to a URL is spooled locally and uploaded when it ends; when that upload fails the spool is
kept and the failure logged with this command line. The bundle's files are uploaded first and
integrity.json last, the bundle is read back from the URL with its integrity verified, and only then is the
spool deleted (``--keep-spool`` keeps it). Exit 0 uploaded; 2 the spool is not a finished bundle (or fails
its own integrity check), the URL is unusable or the extra is missing; 1 the store refused a write or the
read-back did not verify (the bundle on the URL stays incomplete; run the command again).
"""

from __future__ import annotations

from typing import Annotated

import typer


def upload(
    spool: Annotated[str, typer.Argument(help="The spooled .sftrace bundle directory.")],
    url: Annotated[str, typer.Argument(help="Destination URL, e.g. s3://bucket/runs/RUN.sftrace.")],
    keep_spool: Annotated[
        bool, typer.Option("--keep-spool", help="Keep the spool after the upload.")
    ] = False,
) -> None:
    """Upload a spooled bundle to object storage (integrity.json last)."""
    from pathlib import Path

    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace._files import remove_tree
    from stepfork.trace.errors import TraceStorageError
    from stepfork.trace.remote import fetched_bundle, upload_bundle, url_of

    target = url_of(url)
    if target is None:
        fail(f"Not a URL: {url} (expected e.g. s3://bucket/runs/RUN.sftrace).", 2)
    if not target.rstrip("/").endswith(".sftrace"):
        fail(f"The destination must end with .sftrace: {target}", 2)
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
    if not keep_spool:
        remove_tree(Path(spool))
    typer.echo(f"Uploaded {spool} to {target}" + ("" if keep_spool else " (spool removed)"))


def register(app: typer.Typer) -> None:
    """Add the ``upload`` command to ``app``."""
    app.command("upload")(upload)
