"""Bundles on object storage: every reader takes an fsspec URL (``s3://``, ``gs://``, ``az://``, ``file://``,
``memory://``) where it takes a bundle path (issue 17). Needs ``pip install 'stepfork-trace[remote]'``
(fsspec) plus the filesystem's own package (``s3fs``, ``gcsfs``, ``adlfs``); this module imports fsspec only
when a URL is actually used, so ``import stepfork.trace`` stays light.

Reading: :func:`fetched_bundle` streams the bundle's files (integrity.json first, then every file it lists)
into a private temporary directory in 1 MiB chunks, verifies integrity.json against the bytes that were
downloaded, and hands the local copy to the ordinary reader; the copy is deleted afterwards. Integrity is
thus checked on exactly what was read, with the same code as local bundles. Object stores have no atomic
rename, so a writer uploads integrity.json last (:func:`upload_bundle`): a bundle on a URL without
integrity.json is an upload that did not finish, and readers refuse it (``incomplete_bundle``).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stepfork.trace._urls import url_of
from stepfork.trace.errors import TraceStorageError

__all__ = [
    "RemoteSupportMissing",
    "fetched_bundle",
    "list_bundles",
    "upload_bundle",
    "url_of",
]

EXTRA = "stepfork-trace[remote]"
_CHUNK = 1 << 20
_CORE = ("manifest.json", "events.jsonl", "redactions.json")
_INTEGRITY = "integrity.json"


class RemoteSupportMissing(TraceStorageError, ImportError):
    """A bundle URL was given but fsspec (the ``remote`` extra) or the filesystem's package is missing."""

    code = "remote_support_missing"


def filesystem(url: str) -> tuple[Any, str]:
    """``(fsspec filesystem, path inside it)`` for ``url``.

    Raises:
        RemoteSupportMissing: fsspec or the protocol's package is not installed (the message names them).
    """
    try:
        import fsspec  # type: ignore[import-not-found,import-untyped,unused-ignore]  # the optional extra
    except ImportError as exc:
        raise RemoteSupportMissing(
            f"{url} is a URL: reading and writing bundles on object storage needs fsspec; "
            f"pip install '{EXTRA}'",
            path=url,
        ) from exc
    try:
        fs, inner = fsspec.core.url_to_fs(url)
        return fs, str(inner)
    except ImportError as exc:
        raise RemoteSupportMissing(
            f"{url}: {exc} (the '{EXTRA}' extra installs fsspec; each store needs its own package: "
            "s3fs, gcsfs, adlfs)",
            path=url,
        ) from exc
    except ValueError as exc:  # an unknown protocol
        raise TraceStorageError(f"{url}: {exc}", code="invalid_path", path=url) from exc


def _download(fs: Any, source: str, target: Path) -> None:
    """Stream ``source`` into ``target`` in 1 MiB chunks (never the whole object in memory)."""
    with fs.open(source, "rb") as remote, target.open("wb") as local:
        for chunk in iter(lambda: remote.read(_CHUNK), b""):
            local.write(chunk)


def _listed_files(integrity: Path, url: str) -> list[str]:
    """The files integrity.json lists, checked to be plain names (never a path outside the bundle)."""
    from stepfork.trace.canonical import loads_json

    try:
        obj = loads_json(integrity.read_bytes())
    except (ValueError, TypeError) as exc:
        raise TraceStorageError(
            f"{url}: integrity.json is not JSON: {exc}", code="invalid_json", path=url
        ) from exc
    files = obj.get("files") if isinstance(obj, dict) else None
    names = list(files) if isinstance(files, dict) else []  # payload files, then extension files
    plain = all(isinstance(n, str) and n and "/" not in n and n not in (".", "..") for n in names)
    if not names or not plain:
        raise TraceStorageError(
            f"{url}: integrity.json does not list the bundle's files",
            code="integrity_metadata_invalid",
            path=url,
        )
    return sorted(set(names) | set(_CORE))


@contextlib.contextmanager
def fetched_bundle(url: str) -> Iterator[Path]:
    """Download the bundle at ``url`` into a temporary directory, verify its integrity, yield the local
    bundle path (deleted on exit).

    Raises:
        RemoteSupportMissing: no fsspec / filesystem package.
        TraceStorageError: ``invalid_manifest`` (the URL does not end in ``.sftrace``), ``missing_file``
            (nothing there, or a listed file absent), ``incomplete_bundle`` (files but no integrity.json:
            an unfinished upload), ``integrity_mismatch`` / ``integrity_metadata_invalid`` (what was read
            does not match integrity.json).
    """
    from stepfork.trace.integrity import verify_bundle_integrity

    fs, root = filesystem(url)
    root = root.rstrip("/")
    name = posixpath.basename(root)
    if not name.endswith(".sftrace"):
        raise TraceStorageError(
            f"bundle URL must end with .sftrace: {url}", code="invalid_manifest", path=url
        )
    fs.invalidate_cache(root)  # a listing cached by this process may predate the upload
    with tempfile.TemporaryDirectory(prefix="stepfork-fetch-") as tmp:
        local = Path(tmp) / name
        local.mkdir()
        try:
            _download(fs, f"{root}/{_INTEGRITY}", local / _INTEGRITY)
        except FileNotFoundError:
            if fs.exists(root) and fs.ls(root):
                raise TraceStorageError(
                    f"incomplete bundle {url}: it has no integrity.json, the file an upload writes last "
                    "(the upload did not finish; `stepfork upload SPOOL URL` completes it)",
                    code="incomplete_bundle",
                    path=url,
                ) from None
            raise TraceStorageError(f"no bundle at {url}", code="missing_file", path=url) from None
        for member in _listed_files(local / _INTEGRITY, url):
            try:
                _download(fs, f"{root}/{member}", local / member)
            except FileNotFoundError:
                raise TraceStorageError(
                    f"{url}: {member} is missing", code="missing_file", path=f"{url}/{member}"
                ) from None
        result = verify_bundle_integrity(local)
        if not result.verified:
            issue = result.issues[0]
            raise TraceStorageError(
                f"{url} fails integrity verification: {issue.message}", code=issue.code, path=url
            )
        yield local


def list_bundles(url: str) -> list[str]:
    """The URLs of the bundles under the prefix ``url`` (every ``*.sftrace`` directory holding a
    manifest.json at any depth), sorted. Incomplete bundles are listed too: reading one refuses it.

    Raises:
        RemoteSupportMissing: no fsspec / filesystem package.
    """
    fs, root = filesystem(url)
    protocol = url.split("://", 1)[0]
    root = root.rstrip("/")
    if root.endswith(".sftrace"):
        return [url]
    found = set()
    fs.invalidate_cache(root)
    for path in fs.find(root):
        parts = path.split("/")
        for index, part in enumerate(parts[:-1]):
            if part.endswith(".sftrace"):
                found.add("/".join(parts[: index + 1]))
                break
    return sorted(_unstrip(fs, protocol, p) for p in found)


def _unstrip(fs: Any, protocol: str, path: str) -> str:
    """A path of ``fs`` as a URL again."""
    unstripped = fs.unstrip_protocol(path)
    return str(unstripped) if "://" in str(unstripped) else f"{protocol}://{path}"


def upload_bundle(spool: str | os.PathLike[str], url: str) -> str:
    """Upload the finished bundle directory ``spool`` to ``url``: every payload and extension file first,
    integrity.json last (its presence marks a complete bundle). Returns ``url``.

    Raises:
        RemoteSupportMissing: no fsspec / filesystem package.
        TraceStorageError: ``missing_file`` (``spool`` is not a finished bundle: no integrity.json),
            ``integrity_mismatch`` (its files do not match integrity.json: never uploaded).
        OSError: the store refused a write (the bundle on the URL stays incomplete; retry).
    """
    from stepfork.trace.integrity import verify_bundle_integrity

    local = Path(spool)
    if not (local / _INTEGRITY).is_file():
        raise TraceStorageError(
            f"{local} is not a finished bundle (no integrity.json)", code="missing_file", path=str(local)
        )
    result = verify_bundle_integrity(local)
    if not result.verified:
        issue = result.issues[0]
        raise TraceStorageError(f"{local}: {issue.message}", code=issue.code, path=str(local))
    fs, root = filesystem(url)
    root = root.rstrip("/")
    fs.makedirs(root, exist_ok=True)  # a directory on file://; a no-op on object stores
    for member in _listed_files(local / _INTEGRITY, str(local)):
        fs.put_file(str(local / member), f"{root}/{member}")
    fs.put_file(str(local / _INTEGRITY), f"{root}/{_INTEGRITY}")
    return url
