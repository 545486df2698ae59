"""Atomic writes of the files the analysis tools produce (exported tests, receipts, HTML views).

One rule for both, so that they behave like any file a user's tools write (docs/decisions.md, "modes of
exported tests and receipts"): a new file gets mode ``0o666 & ~umask`` (the temporary file is created with
``os.open(..., 0o666)`` and the kernel applies the umask, as ``open()`` in any editor does), and a
replaced file keeps its permission bits. ``tempfile.mkstemp`` is not used: it always creates mode 0600,
which turned every exported test and receipt private and downgraded a 0644 file on ``--overwrite``.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["write_chunks_atomically", "write_text_atomically"]

_NEW_FILE_MODE = 0o666  # before the umask, as open(path, "w") uses


def write_text_atomically(destination: Path, text: str, *, replace: bool) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends as given) to ``destination``: :func:`write_chunks_atomically`
    of its bytes; raises as it does."""
    write_chunks_atomically(destination, (text.encode("utf-8"),), replace=replace)


def write_chunks_atomically(destination: Path, chunks: Iterable[bytes], *, replace: bool) -> Path:
    """Write ``chunks`` to ``destination`` via a hidden temporary sibling, streamed; return ``destination``.

    The temporary file is fsynced, then renamed over ``destination`` (``replace=True``, ``os.replace``)
    or hard-linked to it (``replace=False``, ``os.link``: refuses an existing name without a
    check-then-write race; an existing name is also refused before ``chunks`` is iterated). Missing parent
    directories are created. With ``replace=True`` an existing regular file (a symlink is followed for its
    mode, and the link itself is replaced) keeps its permission bits (``0o777``); otherwise the new file
    gets ``0o666 & ~umask``.

    Raises:
        FileExistsError: ``replace`` is false and ``destination`` exists (nothing is changed).
        NotADirectoryError: a file stands where the parent directory should be.
        OSError: ``replace`` is true and ``destination`` exists but is not a regular file (directory,
            device, FIFO; nothing is changed), or the directory cannot be created or the file cannot be
            written or renamed.
        Whatever iterating ``chunks`` raises (the temporary file is removed, nothing is changed).
    """
    keep_mode = _existing_mode(destination) if replace else None
    if not replace and os.path.lexists(destination):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(destination))
    directory = destination.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a directory should be; not "destination exists"
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(directory)) from None
    tmp = directory / f".{destination.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _NEW_FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            if keep_mode is not None:
                os.chmod(tmp, keep_mode)
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, destination)
        else:
            os.link(tmp, destination)
    finally:
        tmp.unlink(missing_ok=True)
    return destination


def _existing_mode(path: Path) -> int | None:
    """The permission bits of the regular file at ``path`` (following a symlink); None when nothing is
    there (or a dangling symlink). Raises OSError for anything else: ``os.replace`` over a device or FIFO
    would swap out its directory entry (``/dev/null`` for root), so only regular files are replaced."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(status.st_mode):
        raise OSError(f"{path} exists and is not a regular file; it is not replaced")
    return stat.S_IMODE(status.st_mode) & 0o777
