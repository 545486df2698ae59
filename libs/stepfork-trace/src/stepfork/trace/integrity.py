"""integrity.json: SHA-256 digests of the exact bytes of manifest.json, events.jsonl and redactions.json.

Notes 2.4: the record is ``{"schema_version": "0.1", "algorithm": "sha256", "files": {name: hex}}``,
pretty-printed, final newline; it covers the three payload files, not itself. Verification gives one
status (``verified``, ``mismatch``, ``unverified_legacy``) and issues with exactly the notes' codes:
``integrity_unverified`` (no integrity.json: the legacy case), ``integrity_metadata_invalid``,
``integrity_algorithm_unsupported``, ``missing_file``, ``integrity_mismatch``.

Files are hashed from one read up to 1 MiB, in chunks beyond (``hashlib.file_digest``), so memory stays
bounded whatever the bundle size.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from stepfork.trace import _files
from stepfork.trace._files import INTEGRITY_FILE, PAYLOAD_FILES
from stepfork.trace.canonical import loads_json
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.models import IntegrityRecord, IntegrityStatus

ALGORITHM = "sha256"
_HEX64 = re.compile(r"[0-9a-f]{64}")
# An extension file listed in integrity.json: a plain, visible file name of the bundle directory, so that a
# listed name can never reach outside it (issue 7).
_EXTENSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True)
class IntegrityIssue:
    """One integrity problem: ``code`` (notes 2.4), a human message, the file concerned (or None).

    ``detail`` (not compared): for a ``missing_file`` issue of a listed file that exists but could not be
    read, what is there instead, in the words ``validate`` uses for it (``a symbolic link (refused); ...``,
    ``not a regular file (refused); ...``); None when the file is absent or for any other issue. The
    refusal of :func:`stepfork.trace.reading.check_integrity` says it instead of "missing"."""

    code: str
    message: str
    file: str | None = None
    detail: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class IntegrityResult:
    """Outcome of :func:`verify_bundle_integrity`.

    Attributes:
        status: ``verified`` (every digest matches), ``unverified_legacy`` (no integrity.json) or
            ``mismatch`` (anything else: bad metadata, unsupported algorithm, missing file, differing digest).
        issues: the problems found, empty when verified.
        verified_files: names of the payload files whose digest matched.
    """

    status: IntegrityStatus
    issues: list[IntegrityIssue] = field(default_factory=list)
    verified_files: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        """True when the status is ``verified``."""
        return self.status == IntegrityStatus.VERIFIED


_WHOLE_FILE = 1 << 20
"""Files up to this size (bytes) are hashed from one read; larger ones in chunks (``hashlib.file_digest``).

``file_digest`` zeroes a 256 KiB buffer on every call: for the few-KB files of a typical bundle that was a
quarter of the instructions of loading and replaying it (callgrind, docs/performance.md "Check")."""


def _contents(handle: IO[bytes], limit: int) -> bytes | None:
    """The whole contents of an open regular file, or None (nothing read) when it is over ``limit`` bytes.
    ``read(n)`` allocates n bytes before reading: the file's size, then what it may have grown since."""
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        return None
    data = handle.read(size)
    grown = handle.read()
    return data + grown if grown else data


def file_sha256(path: Path) -> str:
    """Lowercase hex SHA-256 of the regular file at ``path``, symlinks refused; a file over 1 MiB is read in
    chunks, so memory stays bounded whatever the bundle size.

    Raises FileNotFoundError when absent, ``_files.UnsafeFileError`` when not a regular file.
    """
    with os.fdopen(_files.open_regular(path), "rb") as handle:
        data = _contents(handle, _WHOLE_FILE)
        if data is None:
            return hashlib.file_digest(handle, ALGORITHM).hexdigest()
        return hashlib.sha256(data).hexdigest()


KEPT_LIMIT = 16 << 20
"""A payload file up to this size (bytes) is read once by a verified load, which parses the bytes it hashed;
a larger one is hashed in chunks and read again to parse, so memory stays bounded (docs/format.md)."""


def read_whole(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file at ``path``, symlinks refused (what :func:`file_sha256` hashes, kept);
    None when it is larger than ``limit`` bytes (nothing read).

    Raises FileNotFoundError when absent, ``_files.UnsafeFileError`` when not a regular file.
    """
    with os.fdopen(_files.open_regular(path), "rb") as handle:
        return _contents(handle, limit)


def compute_integrity(path: str | os.PathLike[str], extra_files: Sequence[str] = ()) -> IntegrityRecord:
    """Return the integrity record of the bundle directory at ``path`` (digests of its three payload files,
    then of ``extra_files``: extension files such as ``sdk-versions.json``, DESIGN.md "Bundle I/O").

    Raises:
        TraceStorageError: ``missing_file`` when a listed file is absent or not a regular file.
    """
    bundle = Path(path)
    files: dict[str, str] = {}
    for name in (*PAYLOAD_FILES, *extra_files):
        try:
            files[name] = file_sha256(bundle / name)
        except OSError as exc:
            raise TraceStorageError(
                f"cannot hash {name}: {exc}", code="missing_file", path=str(bundle / name)
            ) from None
    return IntegrityRecord(algorithm=ALGORITHM, files=files)


def write_integrity(path: str | os.PathLike[str], extra_files: Sequence[str] = ()) -> Path:
    """Compute and write ``integrity.json`` atomically into the bundle at ``path``; return its path.

    ``extra_files`` are listed after the payload files. Raises TraceStorageError ``missing_file`` as
    :func:`compute_integrity`.
    """
    bundle = Path(path)
    record = compute_integrity(bundle, extra_files)
    target = bundle / INTEGRITY_FILE
    _files.atomic_write(target, _files.pretty_json(record.model_dump(mode="json")))
    return target


def _mismatch(code: str, message: str, file: str | None = INTEGRITY_FILE) -> IntegrityResult:
    return IntegrityResult(IntegrityStatus.MISMATCH, [IntegrityIssue(code, message, file)])


def verify_bundle_integrity(
    path: str | os.PathLike[str], *, keep: MutableMapping[str, bytes] | None = None
) -> IntegrityResult:
    """Check the bundle at ``path`` against its integrity.json (notes 2.4). Never raises for bundle content.

    ``keep``: when given, each payload file of at most :data:`KEPT_LIMIT` bytes is read whole, and the
    bytes that were hashed are put into it by file name, so a loader parses exactly what was verified,
    from one read (:func:`stepfork.trace.bundle.load_verified_trace`); larger files, and every file
    without ``keep``, are hashed in chunks over 1 MiB (memory bounded). Nothing is put into it for a
    bundle without integrity.json.

    Returns ``unverified_legacy`` with an ``integrity_unverified`` issue when integrity.json is absent from
    a legacy bundle; ``mismatch`` with a ``missing_file`` issue (``detail`` says why) when it is absent from
    a finished run whose manifest names Stepfork 0.2.0 or later, which always writes it
    (:data:`FIRST_VERSION_WITH_INTEGRITY`: it was removed, so the bundle changed after it was written);
    ``mismatch`` with ``integrity_metadata_invalid`` (not a regular file, bad JSON, bad shape, unknown
    top-level key, a payload digest missing or not 64 lowercase hex, a listed extension name that is not a
    plain file name of the bundle), ``integrity_algorithm_unsupported`` (not sha256), ``missing_file`` or
    ``integrity_mismatch`` issues (payload and listed extension files alike); ``verified`` otherwise.
    """
    bundle = Path(path)
    meta_path = bundle / INTEGRITY_FILE
    try:
        fd = _files.open_regular(meta_path)
    except FileNotFoundError:
        writer = _writer_of_integrity(bundle)
        if writer is not None:  # not legacy: integrity.json was removed (docs/decisions.md)
            detail = (
                f"missing, but manifest.json says Stepfork {writer} wrote this finished run, and it writes "
                "integrity.json at the end of every run it finishes: the bundle changed after it was "
                "written and is refused"
            )
            issue = IntegrityIssue("missing_file", f"{INTEGRITY_FILE} is {detail}", INTEGRITY_FILE, detail)
            return IntegrityResult(IntegrityStatus.MISMATCH, [issue])
        return IntegrityResult(
            IntegrityStatus.UNVERIFIED_LEGACY,
            [IntegrityIssue("integrity_unverified", "bundle has no integrity.json metadata", INTEGRITY_FILE)],
        )
    except OSError as exc:
        return _mismatch("integrity_metadata_invalid", f"integrity.json is unreadable: {exc}")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    try:
        obj = loads_json(data)
    except (TraceStorageError, ValueError, TypeError) as exc:
        return _mismatch("integrity_metadata_invalid", f"integrity.json is not valid JSON: {exc}")
    if isinstance(obj, dict) and isinstance(obj.get("algorithm"), str) and obj["algorithm"] != ALGORITHM:
        return _mismatch(
            "integrity_algorithm_unsupported", f"integrity algorithm {obj['algorithm']!r} is not supported"
        )
    try:
        record = IntegrityRecord.model_validate(obj)
    except ValidationError as exc:
        return _mismatch(
            "integrity_metadata_invalid", f"integrity.json has a bad shape: {exc.errors()[0]['msg']}"
        )
    # Extension files listed beside the payload files are verified too (DESIGN.md "Bundle I/O"): a changed
    # sdk-versions.json must not pass. The reference ignored extra names; it never wrote any.
    extensions = [name for name in record.files if name not in PAYLOAD_FILES]
    for name in extensions:
        if not _EXTENSION_NAME.fullmatch(name) or name == INTEGRITY_FILE:
            return _mismatch(
                "integrity_metadata_invalid",
                f"integrity.json lists {name!r}, which is not a plain file name inside the bundle",
            )
    for name in (*PAYLOAD_FILES, *extensions):
        digest = record.files.get(name)
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            return _mismatch(  # the issue names the file whose digest is missing, as the reference's did
                "integrity_metadata_invalid",
                f"integrity.json: digest of {name} is missing or not 64 lowercase hex",
                name,
            )
    issues: list[IntegrityIssue] = []
    verified: list[str] = []
    for name in (*PAYLOAD_FILES, *extensions):
        try:
            kept = keep is not None and name in PAYLOAD_FILES
            whole = read_whole(bundle / name, KEPT_LIMIT) if kept else None
            if whole is not None and keep is not None:
                actual = hashlib.sha256(whole).hexdigest()
                keep[name] = whole
            else:
                actual = file_sha256(bundle / name)
        except OSError as exc:
            issues.append(_unreadable(name, exc))
            continue
        if actual == record.files[name]:
            verified.append(name)
        else:
            issues.append(
                IntegrityIssue("integrity_mismatch", f"{name} digest does not match integrity.json", name)
            )
    status = IntegrityStatus.MISMATCH if issues else IntegrityStatus.VERIFIED
    return IntegrityResult(status, issues, verified)


_NOT_REGULAR = "a bundle file must be a regular file inside the bundle"

FIRST_VERSION_WITH_INTEGRITY = (0, 2)
"""Stepfork 0.2.0 and later write integrity.json at the end of every run they finish (recording, ``save``,
``redact``, ``fork``, ``minimize``); the earlier implementation (0.1.0aN) and other writers may not."""

_VERSION = re.compile(r"(\d+)\.(\d+)")


def _writer_of_integrity(bundle: Path) -> str | None:
    """The ``stepfork_version`` of ``bundle``'s manifest when it names a Stepfork that writes integrity.json
    for every run it finishes (:data:`FIRST_VERSION_WITH_INTEGRITY`) and the run is finished (status not
    ``running``: a killed recording never reached integrity.json); else None (a legacy bundle, or a
    manifest that cannot say: the loader reports that one). Reads manifest.json only, with the core files'
    rules (a regular file, JSON read by ``loads_json``)."""
    try:
        fd = _files.open_regular(bundle / _files.MANIFEST_FILE)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(_MANIFEST_LIMIT)
    try:
        manifest = loads_json(data)
    except (TraceStorageError, ValueError, TypeError):
        return None
    if not isinstance(manifest, dict) or manifest.get("status") == "running":
        return None
    environment = manifest.get("environment")
    version = environment.get("stepfork_version") if isinstance(environment, dict) else None
    found = _VERSION.match(version) if isinstance(version, str) else None
    if found is None or (int(found[1]), int(found[2])) < FIRST_VERSION_WITH_INTEGRITY:
        return None
    return str(version)


_MANIFEST_LIMIT = 1 << 20  # a manifest is a few hundred bytes; more is not one this check reads


def _unreadable(name: str, exc: OSError) -> IntegrityIssue:
    """The ``missing_file`` issue of the listed file ``name`` that could not be opened (``exc``), saying what
    is there: nothing (FileNotFoundError), a symlink or another non-regular file (``_files.UnsafeFileError``,
    never followed or read: the words ``validate`` prints for it), or an unreadable file (its OS error)."""
    if isinstance(exc, FileNotFoundError):
        return IntegrityIssue("missing_file", f"{name} is missing", name)
    if isinstance(exc, _files.UnsafeFileError):
        what = "a symbolic link" if exc.symlink else "not a regular file"
        detail = f"{what} (refused); {_NOT_REGULAR}"
        return IntegrityIssue("missing_file", f"{name} is {what} (refused)", name, detail)
    why = f"cannot be read ({exc.strerror or exc})"
    return IntegrityIssue("missing_file", f"{name} {why}", name, why)
