"""``stepfork view BUNDLE [CANDIDATE] [-o FILE.html] [--overwrite] [--open]`` (issue 16; docs/view.md).

One bundle: the run's view. Two bundles: the behaviour diff of BASELINE and CANDIDATE side by side. The
page is one self-contained HTML file (:mod:`stepfork.analysis.view`). Default output: beside the bundle
(``run.sftrace`` -> ``run.html``; for a diff ``BASE-vs-CAND.html`` beside the candidate; for a bundle URL
``run.html`` in the current directory). Exit 0 written, 2 unreadable bundle, an existing output without
``--overwrite``, an output inside a bundle directory (even with ``--overwrite``), or a file that cannot
be written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def view(
    bundles: Annotated[
        list[Path], typer.Argument(help="A .sftrace bundle, or BASELINE CANDIDATE for their diff.")
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="HTML file to write (default: beside the bundle)."),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output file.")] = False,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the written file in the system browser, when there is one.")
    ] = False,
) -> None:
    """Write a self-contained HTML view of a run (or the diff of two runs)."""
    from stepfork.analysis import view as views
    from stepfork.cli import htmlout
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace import TraceError

    if len(bundles) > 2:
        fail("view takes one bundle, or BASELINE CANDIDATE for a diff.", 2)
    if len(bundles) == 1:
        target = output or views.default_output(bundles[0])
    else:
        base, cand = views.default_output(bundles[0]), views.default_output(bundles[1])
        target = output or cand.with_name(f"{base.stem}-vs-{cand.stem}.html")
    htmlout.check_target(target, overwrite=overwrite)  # never inside a bundle, even with --overwrite
    try:
        if len(bundles) == 1:
            written = views.write_trace_view(bundles[0], target, overwrite=overwrite)
        else:
            from stepfork.analysis.diff import diff_traces

            result = diff_traces(bundles[0], bundles[1])
            written = views.write_diff_view(result, target, overwrite=overwrite)
    except TraceError as exc:
        fail(f"Unreadable bundle: {sanitize_text(str(exc), keep=bundles)}", 2)
    except FileExistsError:
        fail(f"{target} exists; pass --overwrite to replace it.", 2)
    except OSError as exc:
        fail(f"Cannot write {target}: {exc.strerror or exc}", 2)
    typer.echo(f"Wrote {written}")
    if open_browser:
        _open(written)


def _open(path: Path) -> None:
    """Open ``path`` with :mod:`webbrowser`; say so on stderr when no browser is available."""
    import webbrowser

    try:
        opened = webbrowser.open(path.resolve().as_uri())
    except webbrowser.Error:
        opened = False
    if not opened:
        typer.echo("No browser available; open the file yourself.", err=True)


def register(app: typer.Typer) -> None:
    """Add the ``view`` command to ``app``."""
    app.command("view")(view)
