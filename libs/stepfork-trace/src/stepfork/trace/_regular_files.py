"""The files of a bundle directory by name, and opening one safely: a regular file, never through a symlink.

Reading opens with ``O_NOFOLLOW | O_NONBLOCK`` and checks ``fstat`` on the open descriptor, so a symlink, a
directory, a FIFO or a device in place of a bundle file is refused without following or blocking, and the
check cannot race with the read (docs/format.md, "Reading"). Split from :mod:`stepfork.trace._files`, which
re-exports every name, so that a reader without pydantic (``_quick_validation``) opens files the same way.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (stepfork validate's cold start)
if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

BUNDLE_SUFFIX = ".sftrace"
MANIFEST_FILE = "manifest.json"
EVENTS_FILE = "events.jsonl"
REDACTIONS_FILE = "redactions.json"
INTEGRITY_FILE = "integrity.json"
PAYLOAD_FILES = (MANIFEST_FILE, EVENTS_FILE, REDACTIONS_FILE)

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class UnsafeFileError(OSError):
    """A bundle file exists but is not a regular file reached without a symlink.

    Attributes:
        symlink: True when the name is a symbolic link, False for a directory, FIFO, socket or device.
    """

    def __init__(self, path: Path, *, symlink: bool) -> None:
        what = "a symbolic link" if symlink else "not a regular file"
        super().__init__(f"{path}: {what} (refused)")
        self.symlink = symlink


def open_regular(path: Path) -> int:
    """Open ``path`` read-only without following a symlink and return its descriptor.

    Raises:
        FileNotFoundError: nothing exists at ``path``.
        UnsafeFileError: ``path`` is a symlink, a directory or any other non-regular file.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(path, symlink=True) from None
        if exc.errno == errno.ENOENT:
            raise FileNotFoundError(str(path)) from None
        if os.path.islink(path):
            raise UnsafeFileError(path, symlink=True) from None
        if os.path.isdir(path):
            raise UnsafeFileError(path, symlink=False) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafeFileError(path, symlink=False)
    return fd
