"""The crash-safe incremental writer of one recording, :class:`BundleWriter` (docs/architecture.md, "Crash
safety"), and the fork rule that keeps a forked child out of its parent's bundles. Re-exported by
:mod:`stepfork.trace.bundle`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from stepfork.trace import _files
from stepfork.trace._files import EVENTS_FILE, MANIFEST_FILE, REDACTIONS_FILE
from stepfork.trace.bundle_bytes import manifest_bytes, prepare_event, redactions_bytes
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.integrity import write_integrity
from stepfork.trace.models import EventBase, RedactionEntry, TraceManifest
from stepfork.trace.redaction import Redactor

WRITE_BUFFER_BYTES = 64 * 1024


class BundleWriter:
    """The crash-safe incremental writer of one recording (docs/architecture.md, "Crash safety").

    Opening creates the bundle directory and writes manifest.json (pass status ``running``) and an empty
    redactions.json atomically. Event lines are appended to events.jsonl through a buffer of at most
    ``buffer_bytes`` that :meth:`flush` hands to the OS (the recorder flushes at every call boundary, so a
    killed process keeps every event up to the last flush). :meth:`finalize` rewrites the manifest and the
    redactions atomically and writes integrity.json last. All methods are thread-safe.

    The writer does not redact or hash events: give it lines made by :func:`prepare_event`. It does redact
    the manifests it writes and adds those findings to the redaction entries.

    A writer belongs to the process that opened it: in a forked child (``os.fork``, a ``multiprocessing``
    pool forking) every method does nothing, so the child can neither append to the parent's events.jsonl
    through the descriptor it inherited nor finalize the bundle (:func:`_disown_writers_in_child`).

    Raises (constructor): TraceStorageError ``invalid_path`` / ``already_exists`` as :func:`save_trace`;
    with ``overwrite`` an existing bundle is removed first.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        manifest: TraceManifest,
        *,
        overwrite: bool = False,
        buffer_bytes: int = WRITE_BUFFER_BYTES,
        redactor: Redactor | None = None,
    ) -> None:
        self.path = Path(path)
        replace = _files.check_target(self.path, overwrite=overwrite)
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._limit = buffer_bytes
        self._redactor = redactor
        self._closed = False
        self._disowned = False  # True in a forked child: the bundle is the parent's
        self.events_written = 0
        data, _ = manifest_bytes(manifest, redactor)
        # The three files are made in a hidden staging directory renamed into place, so a process killed
        # while opening leaves either no bundle or a whole one, never a directory missing a required file.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = _files.temp_name(self.path, "open")
        staging.mkdir()
        self._fd: int | None = None
        try:
            _files.write_file(staging / REDACTIONS_FILE, redactions_bytes([]))
            _files.write_file(staging / MANIFEST_FILE, data)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
            self._fd = os.open(staging / EVENTS_FILE, flags, 0o644)
            _files.fsync_dir(staging)
            if replace:
                _files.remove_tree(self.path)
            elif self.path.exists():
                self.path.rmdir()  # an empty directory (check_target allows it)
            os.rename(staging, self.path)  # the open descriptor follows the renamed directory
        except BaseException:
            if self._fd is not None:
                os.close(self._fd)
            if staging.exists():
                _files.remove_tree(staging)
            raise
        _files.fsync_dir(self.path.parent)
        _open_writers.add(self)

    def _disown(self) -> None:
        """Forget the bundle in a forked child: its queued lines and its descriptor are the parent's."""
        self._disowned = True
        self._lock = threading.Lock()  # another parent thread may have held it at the fork
        self._buffer = bytearray()
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # the child's copy only

    def append(self, event_line: bytes) -> None:
        """Queue one events.jsonl line (exactly one ``\\n``, at the end); write out when the buffer is full.

        Raises ValueError for a malformed line, TraceStorageError ``writer_closed`` after finalize/close.
        """
        if not event_line.endswith(b"\n") or b"\n" in event_line[:-1]:
            raise ValueError("an event line must hold exactly one newline, at its end")
        if self._disowned:
            return
        with self._lock:
            self._check_open()
            self._buffer += event_line
            self.events_written += 1
            if len(self._buffer) >= self._limit:
                self._write_buffer()

    def write_line(self, event_line: bytes, flush: bool = True) -> None:
        """:meth:`append` then, with ``flush``, :meth:`flush`, under one lock: the recorder's path.

        A line written with the buffer empty goes to the OS as is, not copied into the buffer first.
        Raises as :meth:`append` and :meth:`flush` do.
        """
        if event_line.find(b"\n") != len(event_line) - 1:  # memchr: no copy of the line
            raise ValueError("an event line must hold exactly one newline, at its end")
        if self._disowned:
            return
        with self._lock:
            if self._closed:
                self._check_open()
            self.events_written += 1
            buffer = self._buffer
            if flush and not buffer:
                self._write_all(event_line)
            else:
                buffer += event_line
                if flush or len(buffer) >= self._limit:
                    self._write_buffer()

    def append_event(self, event: EventBase) -> list[RedactionEntry]:
        """Redact, hash and queue ``event`` (:func:`prepare_event`); return its new redaction entries."""
        line, entries = prepare_event(event, self._redactor)
        self.append(line)
        return entries

    def flush(self) -> None:
        """Hand every queued line to the OS (no fsync: survives a killed process, not a power loss)."""
        if self._disowned:
            return
        with self._lock:
            self._check_open()
            self._write_buffer()

    def finalize(
        self,
        manifest: TraceManifest,
        redaction_entries: Sequence[RedactionEntry],
        extra_files: Mapping[str, bytes] | None = None,
    ) -> Path:
        """Flush and fsync events.jsonl, rewrite manifest and redactions atomically, write integrity last.

        ``extra_files`` maps extension file names (``sdk-versions.json``; already redacted bytes) to their
        content: each is written atomically and listed in integrity.json (DESIGN.md "Bundle I/O").
        Returns the bundle path. The manifest is written as given (the caller sets status and totals).
        Raises TraceStorageError ``writer_closed`` when already finalized or closed.
        """
        if self._disowned:
            return self.path
        with self._lock:
            self._check_open()
            self._close_events()
            data, found = manifest_bytes(manifest, self._redactor)
            extras = dict(extra_files or {})
            for name, content in extras.items():
                _files.atomic_write(self.path / name, content)
            _files.atomic_write(self.path / REDACTIONS_FILE, redactions_bytes([*redaction_entries, *found]))
            _files.atomic_write(self.path / MANIFEST_FILE, data)
            write_integrity(self.path, tuple(extras))
            _files.fsync_dir(self.path)
        return self.path

    def close(self) -> None:
        """Flush, fsync, close events.jsonl; no finalize (leaves a ``running`` bundle). Idempotent."""
        if self._disowned:
            return
        with self._lock:
            if not self._closed:
                self._close_events()

    def _check_open(self) -> None:
        if self._closed:
            raise TraceStorageError("bundle writer is closed", code="writer_closed", path=str(self.path))

    def _write_buffer(self) -> None:
        self._write_all(self._buffer)
        self._buffer.clear()

    def _write_all(self, data: bytes | bytearray) -> None:
        fd = self._fd
        if fd is None:
            return
        written = os.write(fd, data)
        if written == len(data):  # the common case: one write took it all
            return
        view = memoryview(data)[written:]  # a partial write (a signal, a full disk): write the rest
        try:
            while view:
                view = view[os.write(fd, view) :]
        finally:
            view.release()

    def _close_events(self) -> None:
        self._write_buffer()
        self._closed = True
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


_open_writers: weakref.WeakSet[BundleWriter] = weakref.WeakSet()


def _disown_writers_in_child() -> None:
    """``os.register_at_fork`` hook: a forked child writes nothing into its parent's bundles."""
    for writer in list(_open_writers):
        writer._disown()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_disown_writers_in_child)
