"""Telling a bundle URL from a local path, without importing fsspec (:mod:`stepfork.trace.remote`)."""

from __future__ import annotations

import os
import re

# scheme + ":/" : two letters at least, so a Windows drive ("C:/") is never a URL
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")


def url_of(path: str | os.PathLike[str]) -> str | None:
    """The fsspec URL ``path`` names (``s3://bucket/run.sftrace``), or None for a local path.

    A URL whose ``//`` was collapsed by ``pathlib`` (``Path("s3://b/k")`` is ``s3:/b/k``, as a CLI
    argument typed as a path becomes) is restored: ``s3:/b/k`` is ``s3://b/k``, ``file:/tmp/x`` is
    ``file:///tmp/x`` (docs/decisions.md).
    """
    if not isinstance(path, (str, os.PathLike)):
        return None
    text = os.fspath(path)
    match = _URL.match(text)
    if match is None:
        return None
    scheme, rest = match.group(1), text[match.end() :]
    if rest.startswith("/"):
        return text
    return f"file:///{rest}" if scheme == "file" else f"{scheme}://{rest}"
