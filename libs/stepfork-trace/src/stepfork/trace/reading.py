"""Reading a bundle's files: the payload files opened in one order, events.jsonl streamed line by line,
extension files.

Bundles are read as stored (interop/REFERENCE-NOTES.md sections 1 and 5, docs/format.md "Reading"):
nothing is repaired, guessed or executed, and every problem is a ``TraceStorageError`` with a code, a path
and, for events.jsonl, a 1-based line. :func:`open_bundle` opens the three payload files in the loader's
order (so every caller reports the same first problem) and :class:`EventStream` parses events.jsonl one
line at a time, so a caller that keeps only part of each event (``validate_bundle``) holds one line's
payloads at a time instead of the whole trace. The loaders that build a ``Trace`` from what is read here
(``load_trace``, ``load_verified_trace``, ``read_trace``) live beside ``Trace`` in ``bundle.py``, so that
this module never imports it.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from stepfork.trace import _files
from stepfork.trace._files import EVENTS_FILE, INTEGRITY_FILE, MANIFEST_FILE, REDACTIONS_FILE
from stepfork.trace._urls import url_of
from stepfork.trace.canonical import loads_json
from stepfork.trace.errors import TraceIntegrityError, TraceStorageError
from stepfork.trace.models import Event, IntegrityStatus, RedactionManifest, RunStatus, TraceManifest

if TYPE_CHECKING:
    from stepfork.trace.bundle import Trace

_CHUNK = 1 << 20  # bytes read at a time when only the newlines are counted


class EventStream:
    """The events of one events.jsonl, parsed in order one line at a time; iterate it once.

    Each line is parsed by ``_files.parse_event_line`` as it is read, so memory holds one line and its
    event, not the file. Reading stops at the size the file had when iteration began (a recorder may still
    be appending). A final line without ``\\n`` is refused before any line is parsed, exactly as a loader
    holding the whole file would, unless ``torn_ok``: then it is left out and its 1-based number is
    :attr:`torn` once iteration ends (a write cut by SIGKILL; nothing on disk changes).

    ``finished``: the manifest's status when the run ended (``completed``, ``failed``), else None: the
    refusal of a torn final line then says why ``--partial`` cannot read it (a crash cuts only a run that
    did not finish; this file was cut after the run ended) and what to do instead.

    Attributes:
        torn: the number of the left-out final line, or None; set when iteration ends.

    Raises (while iterating):
        TraceStorageError: ``invalid_json`` for a final line without ``\\n`` (unless ``torn_ok``), and
            whatever ``_files.parse_event_line`` raises for a line, each with ``line`` set.
    """

    def __init__(
        self,
        handle: BinaryIO,
        path: Path,
        *,
        torn_ok: bool,
        finished: str | None = None,
        size: int | None = None,
    ) -> None:
        self._size = size  # of an in-memory handle (bytes already read and verified); else the file's
        self._handle = handle
        self._path = path
        self._torn_ok = torn_ok
        self._finished = finished
        self.torn: int | None = None

    def __iter__(self) -> Iterator[Event]:
        handle, path, parse = self._handle, self._path, _files.parse_event_line
        size = self._size if self._size is not None else os.fstat(handle.fileno()).st_size
        if size and not self._torn_ok and not self._ends_with_newline(size):
            raise self._truncated(self._count_newlines(size) + 1)
        remaining, number = size, 0
        while remaining > 0:
            line = handle.readline(remaining)
            if not line:  # the file shrank while it was read: what was read is all there is
                break
            remaining -= len(line)
            number += 1
            if not line.endswith(b"\n"):
                if not self._torn_ok:
                    raise self._truncated(number)
                self.torn = number
                break
            line = line[:-1]
            event = parse(line, number, path)
            del line  # hold the parsed values only, not their text too, while the caller uses them
            yield event
            del event

    def _ends_with_newline(self, size: int) -> bool:
        self._handle.seek(size - 1)
        last = self._handle.read(1)
        self._handle.seek(0)
        return last == b"\n"

    def _count_newlines(self, size: int) -> int:
        count, remaining = 0, size
        while remaining > 0:
            chunk = self._handle.read(min(_CHUNK, remaining))
            if not chunk:
                break
            count += chunk.count(b"\n")
            remaining -= len(chunk)
        self._handle.seek(0)
        return count

    def _truncated(self, line: int) -> TraceStorageError:
        message = f"{self._path.name}:{line}: truncated final line (no trailing newline)"
        if self._finished is not None:  # not a crash mid-run: say why --partial is no way out (CASES C11)
            message += (
                f" in the bundle of a finished run (status {self._finished}): the file was cut after the run "
                "ended, not by a crash while recording, so --partial (for runs that did not finish) cannot "
                "read it; use an intact copy of the bundle (the recorder's original) or record the run again"
            )
        return TraceStorageError(
            message,
            code="invalid_json",
            path=str(self._path),
            line=line,
        )


@dataclass
class OpenBundle:
    """A bundle whose three payload files are open: the parsed manifest, events.jsonl, redactions bytes.

    Made by :func:`open_bundle`; valid only inside its ``with`` block.
    """

    path: Path
    manifest: TraceManifest
    events_file: BinaryIO
    raw_redactions: bytes
    events_size: int | None = None  # set when events_file holds bytes already read (not a file)

    def events(self, *, torn_tail_ok: bool = False) -> EventStream:
        """The events of events.jsonl, streamed (see :class:`EventStream`).

        ``torn_tail_ok``: leave out a final line without ``\\n`` when the manifest is still ``running``
        (partial validation); otherwise such a line is refused with ``invalid_json``.
        """
        running = self.manifest.status == RunStatus.RUNNING
        finished = None if running else str(self.manifest.status)
        events_path = self.path / EVENTS_FILE
        return EventStream(
            self.events_file,
            events_path,
            torn_ok=torn_tail_ok and running,
            finished=finished,
            size=self.events_size,
        )

    def redactions(self) -> RedactionManifest:
        """Parse redactions.json. Raises TraceStorageError as :func:`stepfork.trace.bundle.load_trace`."""
        return _files.parse_redactions(self.raw_redactions, self.path / REDACTIONS_FILE)


@contextlib.contextmanager
def open_bundle(
    path: str | os.PathLike[str], *, verified: Mapping[str, bytes] | None = None
) -> Iterator[OpenBundle]:
    """Open the bundle at ``path``: read manifest.json, open events.jsonl, read redactions.json, parse the
    manifest, in that order (the first problem found is the one every reader reports); close on exit.

    Each file is a regular file inside the bundle, never reached through a symlink (``_files.open_regular``).
    ``path`` may be an fsspec URL (:mod:`stepfork.trace.remote`): the bundle is downloaded and its integrity
    verified first, and then also ``incomplete_bundle``, ``integrity_mismatch`` or
    ``remote_support_missing`` (a :class:`~stepfork.trace.remote.RemoteSupportMissing`) may be raised.

    Raises:
        TraceStorageError: ``invalid_manifest`` (no ``.sftrace`` suffix, a symlinked manifest.json or
            redactions.json, a bad manifest), ``missing_file`` (no directory, a file absent or not regular),
            ``invalid_event`` (a symlinked events.jsonl), ``invalid_json``, ``unsupported_schema``.
    """
    url = url_of(path)
    if url is not None:  # a bundle on object storage: read a verified local copy (stepfork.trace.remote)
        from stepfork.trace.remote import fetched_bundle

        with fetched_bundle(url) as local, open_bundle(local) as opened:
            yield opened
        return
    bundle = Path(path)
    if not bundle.name.endswith(_files.BUNDLE_SUFFIX):
        raise TraceStorageError(
            f"bundle path must end with {_files.BUNDLE_SUFFIX}: {bundle}",
            code="invalid_manifest",
            path=str(bundle),
        )
    if not bundle.is_dir():
        raise TraceStorageError(_files.not_a_bundle(bundle), code="missing_file", path=str(bundle))
    if verified is not None:  # the payload files' bytes, read once and checked against integrity.json
        data = verified[EVENTS_FILE]
        manifest = _files.parse_manifest(verified[MANIFEST_FILE], bundle / MANIFEST_FILE)
        yield OpenBundle(bundle, manifest, io.BytesIO(data), verified[REDACTIONS_FILE], len(data))
        return
    raw_manifest = _files.read_bundle_file(bundle, MANIFEST_FILE, unsafe_code="invalid_manifest")
    with _files.open_bundle_file(bundle, EVENTS_FILE, unsafe_code="invalid_event") as events_file:
        raw_redactions = _files.read_bundle_file(bundle, REDACTIONS_FILE, unsafe_code="invalid_manifest")
        manifest = _files.parse_manifest(raw_manifest, bundle / MANIFEST_FILE)
        del raw_manifest
        yield OpenBundle(bundle, manifest, events_file, raw_redactions)


def counted_events(manifest: TraceManifest | Trace) -> int | None:
    """The number of events a *finished* run's manifest counts (``totals.events``), or None when the run is
    still ``running`` (its totals are not final) or the manifest counts none (it may leave its totals out;
    notes 1.2). The rule by which :func:`stepfork.trace.bundle.load_verified_trace` refuses a bundle cut
    short and ``inspect`` warns about one."""
    if manifest.status == RunStatus.RUNNING or "events" not in manifest.totals.model_fields_set:
        return None
    return int(manifest.totals.events)


def check_integrity(path: str | os.PathLike[str], *, keep: MutableMapping[str, bytes] | None = None) -> None:
    """Refuse a bundle that does not match its integrity.json; a legacy bundle (none) passes.

    ``keep``: filled with the payload files' verified bytes (``verify_bundle_integrity``).

    The one rule of every command that replays or rewrites a bundle (issue 13): a bundle changed after it
    was written (events.jsonl cut at a line boundary, one payload byte edited, a file removed) is refused
    before anything runs, so a changed recording can never be reported as a regression. A path that is not
    a directory is left to :func:`stepfork.trace.bundle.load_trace`, whose error says what it is.

    Raises:
        TraceIntegrityError: one line naming the first file that does not match and recommending
            ``stepfork validate --verify-integrity``; ``code`` is the issue's (notes 2.4). A listed file
            that is there but is a symlink, a FIFO or another non-regular file (or cannot be opened) is
            ``missing_file`` too, and the line says what it is, as ``validate`` does
            (``events.jsonl: a symbolic link (refused); ...``), never "missing".
    """
    from stepfork.trace.integrity import verify_bundle_integrity  # integrity imports nothing from here

    bundle = Path(path)
    if not bundle.is_dir():
        return
    result = verify_bundle_integrity(bundle, keep=keep)
    if result.status != IntegrityStatus.MISMATCH:
        return
    issue = result.issues[0]
    target = bundle / issue.file if issue.file else bundle
    more = f" (and {len(result.issues) - 1} more file(s))" if len(result.issues) > 1 else ""
    advice = f"run `stepfork validate --verify-integrity {bundle}`"
    if issue.detail is not None:  # a symlink, a FIFO...: say what validate says, not "missing"
        raise TraceIntegrityError(
            f"{target}: {issue.detail}{more}; {advice}", code=issue.code, path=str(target), bundle=str(bundle)
        )
    what = {
        "integrity_mismatch": "does not match its digest in integrity.json",
        "missing_file": "is listed in integrity.json but missing",
    }.get(issue.code, f"cannot be checked ({issue.message})")
    raise TraceIntegrityError(
        f"{target} {what}{more}: the bundle changed after it was written and is refused; {advice}",
        code=issue.code,
        path=str(target),
        bundle=str(bundle),
    )


_CORE_FILES = frozenset({MANIFEST_FILE, EVENTS_FILE, REDACTIONS_FILE, INTEGRITY_FILE})


@functools.lru_cache(maxsize=64)  # a few constant names, asked for on every replay
def _is_extension_name(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "._-" for c in name) and f"{name}.json" not in _CORE_FILES


def read_extension(path: str | os.PathLike[str], name: str) -> Any:
    """The JSON of the extension file ``<name>.json`` of a bundle (``sdk-versions``, ``fork``), or None.

    Extension files are extra files a writer lists in integrity.json (DESIGN.md "Bundle I/O"); schema 0.1
    readers ignore them. Read with the same rules as the core files: a regular file inside the bundle, never
    a symlink, JSON read without changing a value (canonical.loads_json).

    Returns:
        the parsed JSON value, or None when the bundle has no such file.

    Raises:
        ValueError: ``name`` is not a plain extension name (letters, digits, ``._-``; not a core file).
        TraceStorageError: the file is a symlink (``unsafe_path``), not a regular file, or not JSON
            (``invalid_json``).
    """
    if not _is_extension_name(name):
        raise ValueError(f"not an extension file name: {name!r}")
    file_name = f"{name}.json"
    try:  # most bundles lack most extension files: say so without building a TraceStorageError (15 us)
        os.lstat(os.path.join(path, file_name))
    except FileNotFoundError:
        return None
    except OSError:
        pass  # the read below reports it as it always has
    try:
        data = _files.read_bundle_file(Path(path), file_name, unsafe_code="unsafe_path")
    except TraceStorageError as exc:
        if exc.code == "missing_file" and not os.path.lexists(Path(path) / file_name):
            return None
        raise
    return loads_json(data)
