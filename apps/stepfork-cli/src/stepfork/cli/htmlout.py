"""``--html FILE`` of ``replay`` and ``minimize``: refuse an existing file before any work, write after.

The page itself comes from :mod:`stepfork.analysis.view`; this module only turns its errors into the CLI's
one-line messages (exit 2), so a report that cannot be written never shows a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

HTML_HELP = "Also write the report as a self-contained HTML page to FILE (see `stepfork view`)."


def check_target(path: Path | None, *, overwrite: bool, pages_only: bool = False) -> None:
    """Exit 2 with one line when the HTML page may not be written at ``path`` (None: no page asked for).

    Refused even with ``overwrite``: ``path`` is or lies inside a bundle directory, is a directory or
    another non-regular file (the shared rule, :func:`stepfork.trace._outputs.output_target_problem`).
    Refused without ``overwrite`` (``FILE exists; pass --overwrite``): ``path`` exists. With
    ``pages_only`` (``minimize``, whose ``--overwrite`` is given for its output bundle too), an existing
    file is replaced only when it is a page Stepfork wrote (``stepfork.analysis.view.is_view_page``); any
    other file is refused, ``--overwrite`` or not. Used by ``view``, ``replay --html`` and ``minimize
    --html`` before any work.
    """
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace._outputs import output_target_problem

    if path is None:
        return
    problem = output_target_problem(path, what="the HTML report", overwrite=True)
    if problem is not None:
        fail(sanitize_text(problem), 2)
    if not overwrite and os.path.lexists(path):
        fail(f"{path} exists; pass --overwrite to replace it.", 2)
    if pages_only and os.path.lexists(path):
        from stepfork.analysis.view import is_view_page

        if not is_view_page(path):
            fail(
                f"{sanitize_text(str(path))} exists and is not an HTML report Stepfork wrote; --overwrite "
                "replaces the output bundle and an earlier report only, never another file. Remove it or "
                "choose another --html path.",
                2,
            )


def write(path: Path, render: Callable[[], Path]) -> None:
    """Run ``render`` (which writes ``path``) and say where it went; exit 2 with one line when it fails."""
    import typer

    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace import TraceError

    try:
        written = render()
    except FileExistsError:
        fail(f"{path} exists; pass --overwrite to replace it.", 2)
    except TraceError as exc:
        fail(f"Cannot write the HTML report: {sanitize_text(str(exc))}", 2)
    except OSError as exc:
        fail(f"Cannot write {path}: {exc.strerror or exc}", 2)
    typer.echo(f"HTML report: {written}", err=True)
