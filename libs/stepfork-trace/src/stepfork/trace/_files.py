"""The files of a bundle directory: safe reads, atomic writes, the exact bytes of each file, and parsing.

Reading opens every file with ``O_NOFOLLOW | O_NONBLOCK`` and checks ``fstat`` on the open descriptor, so a
symlink, a directory, a FIFO or a device in place of a bundle file is refused without following or blocking,
and the check cannot race with the read (docs/format.md, "Reading").

Writing goes through a temporary name in the same directory, ``fsync`` of the file, then ``os.replace``
(docs/architecture.md, "Crash safety"). Pretty files are ``json.dumps(indent=2, ensure_ascii=False)`` plus a
final ``\\n``, keys in the order given (notes 1.2, 1.7, 2.4); event lines are compact, payload keys in
their recorded order (notes 1.3, docs/format.md).

Parsing (``parse_manifest``, ``parse_event_line``, ``parse_redactions``) reads with ``loads_json`` (values
kept exactly) and refuses, with a code, anything pydantic's lax mode would coerce; events.jsonl is streamed
line by line by ``stepfork.trace.reading``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import secrets
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from stepfork.trace._outputs import bundle_output_problem

# The bundle's file names and the safe open live in a module without pydantic (stepfork validate's quick
# verdict reads bundles with them); re-exported here, where the other bundle file helpers are.
from stepfork.trace._regular_files import BUNDLE_SUFFIX as BUNDLE_SUFFIX
from stepfork.trace._regular_files import EVENTS_FILE as EVENTS_FILE
from stepfork.trace._regular_files import INTEGRITY_FILE as INTEGRITY_FILE
from stepfork.trace._regular_files import MANIFEST_FILE as MANIFEST_FILE
from stepfork.trace._regular_files import PAYLOAD_FILES as PAYLOAD_FILES
from stepfork.trace._regular_files import REDACTIONS_FILE as REDACTIONS_FILE
from stepfork.trace._regular_files import UnsafeFileError as UnsafeFileError
from stepfork.trace._regular_files import open_regular as open_regular
from stepfork.trace.canonical import compact_json, loads_json
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.models import EVENT_ADAPTER, SCHEMA_VERSION, Event, RedactionManifest, TraceManifest

# JSON types a field must have before pydantic's lax mode sees it: lax mode would turn "3" or true into 3,
# or an int into a datetime, which would be a silent repair (docs/format.md, "Reading").
_EVENT_INTS = ("step", "duration_ms", "prompt_tokens", "completion_tokens", "total_tokens")
_TOTALS_INTS = ("events", "llm_calls", "tool_calls", "duration_ms")


def read_bundle_file(bundle: Path, name: str, *, unsafe_code: str) -> bytes:
    """Return the bytes of the required file ``bundle/name``; raises as :func:`open_bundle_file`."""
    with open_bundle_file(bundle, name, unsafe_code=unsafe_code) as handle:
        return handle.read()


def open_bundle_file(bundle: Path, name: str, *, unsafe_code: str) -> BinaryIO:
    """Open the required file ``bundle/name`` for reading in binary mode; the caller closes the handle.

    Raises:
        TraceStorageError: ``missing_file`` when absent or not a regular file (a directory, a FIFO);
            ``unsafe_code`` (the file's own code, e.g. ``invalid_manifest``) when it is a symlink.
    """
    path = bundle / name
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        raise TraceStorageError(
            f"missing required file {name}", code="missing_file", path=str(path)
        ) from None
    except UnsafeFileError as exc:
        code = unsafe_code if exc.symlink else "missing_file"
        raise TraceStorageError(str(exc), code=code, path=str(path)) from None
    except OSError as exc:
        raise TraceStorageError(f"cannot read {name}: {exc}", code="missing_file", path=str(path)) from None
    return os.fdopen(fd, "rb")


def pretty_json(value: Any) -> bytes:
    """Return ``value`` as 2-space indented JSON, non-ASCII raw, keys in insertion order, final newline.

    Raises ValueError for NaN/Infinity (the models never hold them).
    """
    return (json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def event_line(fields: Iterable[tuple[str, Any]]) -> bytes:
    """Return one events.jsonl line: ``{"k":v,...}\\n`` with keys in the given order (notes 1.3).

    Each value is written as ``compact_json`` writes it: the canonical encoding (``(",", ":")``, raw
    UTF-8, Python float text) with nested keys in their own order, so a payload reads back exactly as it
    was recorded; its hash covers its canonical (sorted) bytes, never this text (notes 2.2).

    Raises:
        CanonicalJsonError: a value is not plain JSON.
    """
    parts = [b'"' + name.encode("ascii") + b'":' + compact_json(value) for name, value in fields]
    return b"{" + b",".join(parts) + b"}\n"


def temp_name(target: Path, kind: str = "tmp") -> Path:
    """A hidden sibling name ``.<name>.<kind>-<hex>`` of ``target`` in the same directory."""
    return target.with_name(f".{target.name}.{kind}-{secrets.token_hex(8)}")


def write_file(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist), write ``data``, ``fsync`` and close."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: temp file in the same directory, fsync, ``os.replace``."""
    tmp = temp_name(path)
    try:
        write_file(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fsync_dir(path: Path) -> None:
    """``fsync`` a directory so that renames in it survive a power loss (no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_target(path: Path, *, overwrite: bool) -> bool:
    """Check that a bundle may be written at ``path``; return True when a previous bundle must be replaced.

    Raises:
        TraceStorageError: ``invalid_path`` when the name does not end in ``.sftrace``, ``path`` lies inside
            another bundle (:func:`stepfork.trace._outputs.bundle_output_problem`), or ``path`` exists and
            is not a plain directory; ``already_exists`` when it is a non-empty directory and not
            ``overwrite`` (notes 5, "Saving"); ``not_a_bundle`` when, with ``overwrite``, that directory
            is not a bundle (:func:`not_replaceable`).
    """
    if not path.name.endswith(BUNDLE_SUFFIX) or path.name == BUNDLE_SUFFIX:
        raise TraceStorageError(
            f"bundle path must end with {BUNDLE_SUFFIX}: {path}", code="invalid_path", path=str(path)
        )
    inside = bundle_output_problem(path)
    if inside is not None:
        raise TraceStorageError(inside, code="invalid_path", path=str(path))
    if path.is_symlink():  # never written through: the link could point anywhere, even at another bundle
        raise TraceStorageError(
            f"bundle path is a symbolic link: {path} (to {os.readlink(path)}); give the bundle's real path",
            code="invalid_path",
            path=str(path),
        )
    if path.exists() and not path.is_dir():
        raise TraceStorageError(
            f"bundle path exists and is not a directory: {path}", code="invalid_path", path=str(path)
        )
    if not path.exists() or not any(path.iterdir()):
        return False
    if not overwrite:
        raise TraceStorageError(
            f"bundle already exists: {path} (pass overwrite=True)", code="already_exists", path=str(path)
        )
    problem = not_replaceable(path)
    if problem is not None:
        raise TraceStorageError(problem, code="not_a_bundle", path=str(path))
    return True


# What a bundle directory may hold: its files, extension files (``<name>.json``) and the hidden staging
# names of an interrupted write. Anything else is the user's and makes the directory not ours to delete.
_BUNDLE_ENTRY = re.compile(r"(?:[a-z0-9][a-z0-9_-]*\.jsonl?|\..+\.(?:tmp|old|open)-[0-9a-f]+)")


def not_replaceable(path: Path) -> str | None:
    """Why the existing non-empty directory ``path`` must not be replaced by a bundle, or None when it is one.

    ``overwrite`` replaces a bundle, never a user's directory that happens to end in ``.sftrace``
    (issue 14): a bundle holds ``manifest.json`` and ``events.jsonl`` (every writer creates both first) and
    only regular files named like bundle files (``<name>.json``, ``<name>.jsonl``). The reason names what
    is there (at most five entries).
    """
    try:
        entries = sorted(os.listdir(path))
    except OSError as exc:
        return f"cannot list {path}: {exc.strerror}; refusing to replace it"
    foreign = [
        name
        for name in entries
        if not _BUNDLE_ENTRY.fullmatch(name) or not stat.S_ISREG(os.lstat(path / name).st_mode)
    ]
    missing = [name for name in (MANIFEST_FILE, EVENTS_FILE) if name not in entries]
    if missing:
        foreign = foreign or entries
        reason = f"it has no {' or '.join(missing)}"
    elif foreign:
        reason = "it holds files that are not bundle files"
    else:
        return None
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    return f"{path} is not a Stepfork bundle ({reason}: {shown}); refusing to replace it, even with overwrite"


def remove_tree(path: Path) -> None:
    """Delete a directory tree without following symlinks inside it (``shutil.rmtree`` semantics)."""
    import shutil

    shutil.rmtree(path)


# ----------------------------------------------------------------------------------- parsing (load_trace)


def _json(data: bytes, path: Path, line: int | None = None) -> Any:
    where = f"{path.name}:{line}" if line is not None else path.name
    try:
        return loads_json(data)
    except TraceStorageError as exc:
        raise TraceStorageError(
            f"{where}: invalid JSON: {exc}", code=exc.code, path=str(path), line=line
        ) from None
    except (ValueError, TypeError) as exc:  # any other decoder complaint is still bad JSON
        raise TraceStorageError(
            f"{where}: invalid JSON: {exc}", code="invalid_json", path=str(path), line=line
        ) from None


def _check_schema_version(obj: dict[str, Any], path: Path) -> None:
    if "schema_version" in obj and obj["schema_version"] != SCHEMA_VERSION:
        raise TraceStorageError(
            f"{path.name}: unsupported schema version {obj['schema_version']!r} "
            f"(expected {SCHEMA_VERSION!r})",
            code="unsupported_schema",
            path=str(path),
        )


def _wrong_type(obj: dict[str, Any], names: Iterable[str], *, allow_float: bool = False) -> str | None:
    for name in names:
        value = obj.get(name)
        if value is None:
            continue
        ok = type(value) is int or (allow_float and type(value) is float)
        if not ok:
            return name
    return None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err["loc"])
    return f"{loc}: {err['msg']}" if loc else str(err["msg"])


def parse_manifest(data: bytes, path: Path) -> TraceManifest:
    """Parse manifest.json bytes (notes 1.2). Raises TraceStorageError as :func:`load_trace`."""
    obj = _json(data, path)
    if not isinstance(obj, dict):
        raise TraceStorageError(f"{path.name}: not a JSON object", code="invalid_manifest", path=str(path))
    _check_schema_version(obj, path)
    totals = obj.get("totals")
    failure = obj.get("failure")
    bad = (
        ("created_at" if not isinstance(obj.get("created_at"), str) else None)
        or (_wrong_type(totals, _TOTALS_INTS) if isinstance(totals, dict) else None)
        or (_wrong_type(totals, ("cost_usd",), allow_float=True) if isinstance(totals, dict) else None)
        or (_wrong_type(failure, ("step",)) if isinstance(failure, dict) else None)
    )
    if bad:
        raise TraceStorageError(
            f"{path.name}: {bad}: wrong JSON type", code="invalid_manifest", path=str(path)
        )
    try:
        return TraceManifest.model_validate(obj)
    except ValidationError as exc:
        raise TraceStorageError(
            f"{path.name}: invalid manifest: {_first_error(exc)}", code="invalid_manifest", path=str(path)
        ) from None


def parse_redactions(data: bytes, path: Path) -> RedactionManifest:
    """Parse redactions.json bytes (notes 1.7). Raises TraceStorageError as :func:`load_trace`."""
    obj = _json(data, path)
    if not isinstance(obj, dict):
        raise TraceStorageError(f"{path.name}: not a JSON object", code="invalid_manifest", path=str(path))
    _check_schema_version(obj, path)
    try:
        return RedactionManifest.model_validate(obj)
    except ValidationError as exc:
        raise TraceStorageError(
            f"{path.name}: invalid redactions: {_first_error(exc)}", code="invalid_manifest", path=str(path)
        ) from None


_GC_LOCK = threading.Lock()
_gc_pause = [0, False]  # [loads in progress, whether the cyclic GC was enabled before the first]


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while many long-lived objects are built (a bundle's events), then restore it.

    Loading creates many objects that live on (the events), so each full collection during the load
    walks everything loaded so far: loading 10k calls cost more per call than 1k (benchmarks/
    bench_replay.py). The events hold no cycles, so pausing frees nothing late; reference counting
    still frees everything else. Nested or concurrent loads share one pause (a counter under a lock)
    and the state from before the first is restored after the last, so a GC the application turned
    off stays off.
    """
    with _GC_LOCK:
        if _gc_pause[0] == 0:
            _gc_pause[1] = gc.isenabled()
            gc.disable()
        _gc_pause[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_pause[0] -= 1
            if _gc_pause[0] == 0 and _gc_pause[1]:
                gc.enable()


def parse_event_line(line: bytes, number: int, path: Path) -> Event:
    """Parse one events.jsonl line (its bytes without the ``\\n``) into its event model (notes 1.3).

    The one parser of event lines, shared by the loader and the streaming validator (``reading``).
    ``number`` is the 1-based line number, ``path`` the events.jsonl path (both for messages only).

    Raises:
        TraceStorageError: ``invalid_json`` (a blank line, bad JSON or UTF-8, a value loads_json refuses)
            or ``invalid_event`` (not an object, a field of the wrong JSON type, a model error), with
            ``line`` = ``number``.
    """
    if not line.strip():
        raise TraceStorageError(
            f"{path.name}:{number}: blank line", code="invalid_json", path=str(path), line=number
        )
    obj = _json(line, path, number)
    if not isinstance(obj, dict):
        raise TraceStorageError(
            f"{path.name}:{number}: invalid event: not a JSON object",
            code="invalid_event",
            path=str(path),
            line=number,
        )
    bad = (
        ("timestamp" if not isinstance(obj.get("timestamp", ""), str) else None)
        or _wrong_type(obj, _EVENT_INTS)
        or _wrong_type(obj, ("cost_usd",), allow_float=True)
    )
    if bad:
        raise TraceStorageError(
            f"{path.name}:{number}: invalid event: {bad}: wrong JSON type",
            code="invalid_event",
            path=str(path),
            line=number,
        )
    try:
        return EVENT_ADAPTER.validate_python(obj)
    except ValidationError as exc:
        raise TraceStorageError(
            f"{path.name}:{number}: invalid event: {_first_error(exc)}",
            code="invalid_event",
            path=str(path),
            line=number,
        ) from None


def not_a_bundle(path: Path) -> str:
    """The one-line reason ``path`` is not a bundle directory: absent, or something other than a directory."""
    if path.exists() or path.is_symlink():
        return f"not a bundle directory: {path} exists but is not a .sftrace directory"
    return f"bundle not found: {path}"
