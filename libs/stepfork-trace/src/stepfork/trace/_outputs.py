"""Where a tool may write an output file: the one "inside a bundle" rule and the one refusal of a target.

A bundle directory is a directory whose name ends in ``.sftrace`` (the name the bundle reader requires) or
that holds both ``manifest.json`` and ``events.jsonl`` (a bundle copied under another name); a folder that
merely holds a ``manifest.json`` (a web app's, a package's) is the user's, not a bundle. No
report (JUnit XML, receipt, HTML page) is ever written into one, not even with ``--overwrite``: a bundle is
the evidence, and a file added or replaced in it is a bundle silently changed (docs/decisions.md, "outputs
never go inside a bundle"). Used by ``stepfork check``, ``run --receipt``, ``view``, ``replay --html`` and
``minimize --html``, and ``export`` (its test file and ``--otlp`` spans).

A bundle written by a command (``fork``, ``import``, ``record``, ``minimize``, ``redact``, and the library's
``save_trace``/``record(output=...)``) follows the same rule: never inside another bundle
(:func:`bundle_output_problem`), and never over the bundle it reads (:func:`overlap_problem`), not even with
``--overwrite`` (docs/cli.md, "Where outputs may go").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "bundle_output_problem",
    "enclosing_bundle",
    "inside_bundle_problem",
    "is_bundle_dir",
    "output_target_problem",
    "overlap_problem",
]


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


def inside_bundle_problem(path: str | os.PathLike[str], *, what: str) -> str | None:
    """Why a file must not be written at ``path`` because it is a bundle or lies inside one, or None.

    The first refusal of :func:`output_target_problem`, alone, for writers that keep their own rules for
    existing files (``export``: spec "export", ``<path> already exists; pass --overwrite to replace it.``).
    Never raises.

    Returns:
        one line, ``refusing to write <what> to <path>: it is inside the bundle directory <dir> (...)``,
        or None.
    """
    bundle = enclosing_bundle(path)
    if bundle is None:
        return None
    return (
        f"refusing to write {what} to {path}: it is inside the bundle directory {bundle} "
        "(a bundle is never written into)"
    )


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
    inside = inside_bundle_problem(target, what=what)
    if inside is not None:
        return inside
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


def bundle_output_problem(path: str | os.PathLike[str], *, into: bool = False) -> str | None:
    """Why a bundle must not be written at ``path`` because it would lie inside another bundle, or None.

    Args:
        path: the new bundle's path as the user named it (``into=False``), or the directory that will
            hold new bundles (``into=True``: ``import`` of many traces).

    Refused: any ancestor directory of ``path`` (resolved: ``..`` and symlinks followed) is a bundle
    (:func:`enclosing_bundle`: named ``*.sftrace``, existing or not, or holding ``manifest.json`` and
    ``events.jsonl``); with ``into``, also ``path`` itself. A bundle inside a bundle is a file the parent
    never listed: its integrity no longer holds and other writers call it a user's directory.
    Never raises.

    Returns:
        one line, ``refusing to write the bundle <path>: it is inside the bundle directory <dir> ...``,
        or None.
    """
    target = Path(path)
    where = target if into else Path(os.path.abspath(target)).parent
    bundle = enclosing_bundle(where)
    if bundle is None:
        return None
    kind = "bundles into" if into else "the bundle"
    return (
        f"refusing to write {kind} {target}: it is inside the bundle directory {bundle} "
        "(a bundle is never written into)"
    )


def overlap_problem(
    source: str | os.PathLike[str], output: str | os.PathLike[str], *, command: str
) -> str | None:
    """Why ``command`` must not write its output bundle ``output`` from the input bundle ``source``, or None.

    Refused, even with ``--overwrite``: ``output`` is ``source``, lies inside it or contains it, both
    resolved (``..`` and symlinks followed), so a link to the input counts. Used by ``fork``,
    ``minimize`` and ``redact``. Never raises (an unresolvable path: None; the write itself then fails).

    Returns:
        one line, ``--output <output> overlaps the input bundle <source> (...); <command> never writes
        over its input, even with --overwrite.``, or None.
    """
    try:
        here, there = Path(source).resolve(), Path(output).resolve()
    except (OSError, RuntimeError):
        return None
    if there == here or there.is_relative_to(here) or here.is_relative_to(there):
        return (
            f"--output {output} overlaps the input bundle {source} (the same directory, inside it or "
            f"containing it); {command} never writes over its input, even with --overwrite."
        )
    return None
