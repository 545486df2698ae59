"""Where a tool may write an output file: the one "inside a bundle" rule and the one refusal of a target.

A bundle directory is a directory whose name ends in ``.sftrace`` (the name the bundle reader requires) or
that holds both ``manifest.json`` and ``events.jsonl`` (a bundle copied under another name); a folder that
merely holds a ``manifest.json`` (a web app's, a package's) is the user's, not a bundle. No
report (JUnit XML, receipt, HTML page) is ever written into one, not even with ``--overwrite``: a bundle is
the evidence, and a file added or replaced in it is a bundle silently changed (docs/decisions.md, "outputs
never go inside a bundle"). Used by ``stepfork check``, ``run --receipt``, ``view``, ``replay --html`` and
``minimize --html``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["enclosing_bundle", "is_bundle_dir", "output_target_problem"]


def is_bundle_dir(path: Path) -> bool:
    """True when ``path`` is a directory named ``*.sftrace`` or holding both ``manifest.json`` and
    ``events.jsonl`` (module docstring). Never raises."""
    try:
        if not path.is_dir():
            return False
        if path.name.endswith(".sftrace"):
            return True
        return (path / "manifest.json").is_file() and (path / "events.jsonl").is_file()
    except OSError:
        return False


def enclosing_bundle(path: str | os.PathLike[str]) -> Path | None:
    """The bundle directory ``path`` is, or lies inside (its nearest such ancestor), or None.

    ``path`` is resolved first (symlinks followed), so a link into a bundle counts. A component named
    ``*.sftrace`` counts even when it does not exist yet. Never raises (an unresolvable path: None).
    """
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError):
        return None
    for candidate in (resolved, *resolved.parents):
        if candidate.name.endswith(".sftrace") or is_bundle_dir(candidate):
            return candidate
    return None


def output_target_problem(
    path: str | os.PathLike[str],
    *,
    what: str,
    overwrite: bool,
    is_previous: Callable[[Path], bool] | None = None,
    directory: bool = False,
) -> str | None:
    """Why an output must not be written at ``path``, or None when it may. Check before any work.

    Args:
        path: the output as the user named it.
        what: how the message names the output (``the JUnit report``, ``the receipts``, ``the HTML report``).
        overwrite: whether ``--overwrite`` was given.
        is_previous: True for an existing file that is a previous output of the same kind, which is
            replaced without ``--overwrite`` (a JUnit file Stepfork wrote, a receipt); None: none is.
        directory: the output is a directory to write files into (``--receipts DIR``), not a file.

    Refused always: ``path`` is or lies inside a bundle directory (:func:`enclosing_bundle`), is a
    directory where a file is needed (or a file where a directory is), is another non-regular file, or
    has an existing ancestor that is not a directory. Refused unless ``overwrite``: an existing file that
    is not ``is_previous``.

    Returns:
        one line, ``refusing to write <what> to <path>: <why>``, or None.
    """
    target = Path(path)
    where = f"refusing to write {what} to {target}"
    try:
        target.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        return f"{where}: the path cannot be resolved ({exc})"
    bundle = enclosing_bundle(target)
    if bundle is not None:
        return f"{where}: it is inside the bundle directory {bundle} (a bundle is never written into)"
    if directory:
        if target.exists() and not target.is_dir():
            return f"{where}: it exists and is not a directory"
    elif target.is_dir():
        return f"{where}: it is a directory"
    elif target.exists() and not target.is_file():  # a device or FIFO: never replace its directory entry
        return f"{where}: it is not a regular file"
    for parent in target.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                return f"{where}: {parent} is not a directory"
            break
    if directory or overwrite or not (target.exists() or target.is_symlink()):
        return None
    if is_previous is not None and is_previous(target):
        return None
    kind = what.removeprefix("the ")
    return f"{where}: it exists and is not a Stepfork {kind}; pass --overwrite to replace it"
