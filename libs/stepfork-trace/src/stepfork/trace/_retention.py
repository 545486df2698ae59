"""What happens to a recorded bundle when its run ends: retention (``record(..., keep=...)``) and the
upload of a bundle recorded to a URL (``record(..., output="s3://bucket/runs/{run_id}.sftrace")``).

A URL output is recorded into a local spool directory (crash-safe like any bundle) and uploaded when the run
ends, integrity.json last (:func:`stepfork.trace.remote.upload_bundle`). An upload failure never reaches the
agent: it is logged on the ``stepfork.trace`` logger with the spool's path, the spool is kept, and
``stepfork upload SPOOL URL`` finishes it later.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import tempfile
from pathlib import Path
from typing import Any

from stepfork.trace import _files

__all__ = ["SPOOL_ENV", "Keep", "check_keep", "expand_output", "finish_bundle", "is_spool", "spool_path"]

logger = logging.getLogger("stepfork.trace")

SPOOL_ENV = "STEPFORK_SPOOL_DIR"
"""Environment variable naming the spool root for URL outputs (default: ``<tmp>/stepfork-spool``)."""

Keep = Any  # "always" | "failures" | a float share in (0, 1]


def check_keep(keep: Any) -> Any:
    """``keep`` as given when valid: ``"always"``, ``"failures"`` or a share ``0 < p <= 1`` (a sampled share
    of runs, plus every failure).

    Raises:
        ValueError: anything else.
    """
    if keep in ("always", "failures"):
        return keep
    if isinstance(keep, (int, float)) and not isinstance(keep, bool) and 0 < keep <= 1:
        return float(keep)
    raise ValueError(f"keep must be 'always', 'failures' or a share in (0, 1], got {keep!r}")


def retained(keep: Any, *, failed: bool) -> bool:
    """True when a run that ``failed`` (or not) is kept under ``keep`` (a share is drawn at random)."""
    if failed or keep == "always":
        return True
    if keep == "failures":
        return False
    return random.random() < float(keep)  # noqa: S311 - sampling, not security


def expand_output(output: str, *, run_id: str, agent: str) -> str:
    """``output`` with ``{run_id}`` and ``{agent}`` (the file-safe agent name) replaced."""
    return output.replace("{run_id}", run_id).replace("{agent}", agent)


def _spool_root() -> Path:
    return Path(os.environ.get(SPOOL_ENV) or Path(tempfile.gettempdir()) / "stepfork-spool")


def is_spool(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a spool a URL recording left: ``<spool root>/<run_id>/<name>.sftrace``
    (:func:`spool_path`; the root is ``$STEPFORK_SPOOL_DIR`` or ``<tmp>/stepfork-spool``), compared
    after resolving symlinks. What ``stepfork upload`` removes after a verified upload; any other bundle is
    the user's and is kept (docs/remote.md). Never raises."""
    try:
        resolved = Path(path).resolve()
        root = _spool_root().resolve()
    except (OSError, RuntimeError):
        return False
    return resolved.parent.parent == root and resolved.name.endswith(".sftrace")


def spool_path(url: str, run_id: str) -> Path:
    """Where a run recorded to ``url`` is spooled: ``<spool root>/<run_id>/<bundle name>``."""
    root = _spool_root()
    name = url.rstrip("/").rsplit("/", 1)[-1]
    return root / run_id / name


def finish_bundle(path: Path, *, keep: Any, failed: bool, url: str | None) -> str | None:
    """Apply retention to the finished bundle at ``path``, then upload it to ``url`` when one is given.

    Returns:
        ``"discarded"`` (deleted, nothing left behind), ``"uploaded"`` (the spool is removed), ``"spooled"``
        (the upload failed: logged, the spool kept), or None (kept locally).

    Never raises for an upload problem; a discarded bundle that cannot be deleted is logged too.
    """
    if not retained(keep, failed=failed):
        try:
            _files.remove_tree(path)
            if url is not None:
                _remove_empty(path.parent)
        except OSError as exc:
            logger.warning("stepfork: could not delete the discarded bundle %s: %s", path, exc)
        return "discarded"
    if url is None:
        return None
    try:
        from stepfork.trace.remote import upload_bundle

        upload_bundle(path, url)
    except Exception as exc:  # the agent's run must not fail because a store is down
        logger.warning(
            "stepfork: upload of %s to %s failed (%s: %s); the spool is kept: finish it with "
            "`stepfork upload %s %s`",
            path,
            url,
            type(exc).__name__,
            exc,
            path,
            url,
        )
        return "spooled"
    try:
        _files.remove_tree(path)
        _remove_empty(path.parent)
    except OSError as exc:
        logger.warning("stepfork: uploaded %s, but could not delete the spool: %s", url, exc)
    return "uploaded"


def _remove_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not empty or already gone: leave it
        directory.rmdir()
