"""``stepfork check CORPUS --entrypoint M:F [--jobs N] [--junit FILE] [--receipts DIR] [--overwrite]
[--isolation worker|bundle] [--batch-size N] [--allow-command NAME]... [--json]`` (issue 17).

Replays every bundle of a corpus frozen against a candidate build (``stepfork.analysis.check_corpus``) and
prints the summary table (or ``--json``). Every replay is sealed: a child process the seal cannot reach is
refused (that bundle DIVERGED, ``child_process_refused``) unless ``--allow-command NAME`` lets it start,
which the summary's ``Network`` line and each receipt then name. Exit 0 every bundle replays as recorded,
1 a bundle diverged (or could not be checked while others were), 2 nothing could be checked: bad options
(a malformed ``--allow-command`` included), a corpus naming no
bundle, an entrypoint or ``--raise-as`` class that cannot be imported (one line, before the corpus is
replayed), every bundle unreadable/unrunnable, or a refused ``--junit`` / ``--receipts`` target (checked
before any replay: inside a bundle, a directory where a file goes, or an existing file that is not an
earlier Stepfork output without ``--overwrite``; docs/check.md). The progress bar (rich, on stderr) shows
only on a terminal; ``--dask ADDRESS`` runs the replays on a Dask cluster (docs/check.md). With ``--json``
an exit-2 error that stops the check before its result is also ``{"error": <code>, "message": <line>,
"exit_code": 2}`` on stdout (:func:`stepfork.cli.output.with_json_errors`; docs/cli.md "check").
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from stepfork.cli.options import ALLOW_COMMAND_HELP, ISOLATION_VALUES, RAISE_AS_HELP, ordering_option

# The --json error code of an entrypoint that cannot be resolved: the reason its verdicts would carry.
UNRESOLVED = "entrypoint_unresolvable"


def check(
    corpus: Annotated[
        str,
        typer.Argument(
            help="A directory (searched for *.sftrace), a glob, a file listing bundles, or a URL prefix."
        ),
    ],
    entrypoint: Annotated[
        str | None,
        typer.Option(
            "--entrypoint", "-e", help="Trusted local MODULE:FUNCTION to replay each bundle against."
        ),
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", help="Replays at once (default: the number of CPUs).")
    ] = None,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Write JUnit XML (one testcase per bundle) to FILE.")
    ] = None,
    receipts: Annotated[
        Path | None, typer.Option("--receipts", help="Write one JSON receipt per bundle into DIR.")
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Let --junit / --receipts replace an existing file that is not an earlier Stepfork "
            "JUnit report / receipt (earlier ones are always replaced).",
        ),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds per replay before it is killed.")
    ] = 60.0,
    ordering: Annotated[str, ordering_option()] = "auto",
    raise_as: Annotated[
        list[str] | None,
        typer.Option("--raise-as", metavar="TYPE=MODULE:CLASS", help=RAISE_AS_HELP),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option("--dask", metavar="SCHEDULER_ADDRESS", help="Run the replays on this Dask cluster."),
    ] = None,
    warm: Annotated[
        bool,
        typer.Option(
            "--warm",
            help="Replay the first bundle once before forking: SDK caches start warm (module state too).",
        ),
    ] = False,
    isolation: Annotated[
        str,
        typer.Option(
            "--isolation",
            metavar="[" + "|".join(ISOLATION_VALUES) + "]",
            help="worker: a worker process replays many bundles, a fresh one after a replay that changes "
            "the agent's module state; bundle: a fresh process per bundle (slower).",
        ),
    ] = "worker",
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            help="Bundles per task (default: shrinking from a quarter of the corpus per job, 256 at most, "
            "to 8); smaller for slow agents.",
        ),
    ] = None,
    allow_command: Annotated[
        list[str] | None, typer.Option("--allow-command", metavar="NAME", help=ALLOW_COMMAND_HELP)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Replay every bundle of a corpus against a candidate build and summarize the verdicts."""
    from stepfork.analysis.check import python_file_problem
    from stepfork.analysis.export import entrypoint_form_problem
    from stepfork.cli.options import parse_allow_commands, parse_choice, parse_ordering, parse_raise_as
    from stepfork.cli.output import exit_with_result, fail, sanitize_text

    wrong = python_file_problem(corpus)  # a test or script where the bundles go: say so first
    if wrong is not None:
        fail(f"Invalid corpus: {sanitize_text(wrong)}", 2, error="invalid_corpus")
    if not entrypoint:
        fail("Unable to resolve entrypoint.\nmissing --entrypoint MODULE:FUNCTION", 2, error=UNRESOLVED)
    problem = entrypoint_form_problem(entrypoint)
    if problem is not None:  # replay's two lines, before any replay (not one unresolvable per bundle)
        shown = sanitize_text(problem, keep=(entrypoint,))
        fail(f"Unable to resolve entrypoint.\n{shown}", 2, error=UNRESOLVED)
    if jobs is not None and jobs < 1:
        fail(f"--jobs must be at least 1, got {jobs}.", 2)
    if not (timeout > 0 and math.isfinite(timeout)):  # NaN compares false both ways
        fail(f"--timeout must be a positive number of seconds, got {timeout:g}.", 2)
    if batch_size is not None and batch_size < 1:
        fail(f"--batch-size must be at least 1, got {batch_size}.", 2)
    ordering = parse_ordering(ordering)  # up front, as replay: not one could_not_execute per bundle
    allow_command = parse_allow_commands(allow_command)
    isolation = parse_choice("--isolation", isolation, ISOLATION_VALUES)
    if dask and jobs is not None:
        fail(
            "--jobs and --dask exclude each other: the Dask cluster decides how many replays run at once.", 2
        )
    classes = parse_raise_as(raise_as)

    from stepfork.analysis.check import CorpusError, check_corpus, dask_executor
    from stepfork.replay.entrypoint import EntrypointError
    from stepfork.replay.raise_as import RaiseAsClassError

    _check_outputs(corpus, junit, receipts, overwrite=overwrite)  # before any replay: no verdict is lost

    executor: Any = None
    close = None
    if dask:
        try:
            executor, close = dask_executor(dask)
        except ImportError as exc:
            fail(str(exc), 2, error="missing_dependency")
        except (OSError, TimeoutError) as exc:
            fail(f"Cannot reach the Dask scheduler at {dask}: {exc}", 2, error="dask_unreachable")
    progress = _Progress() if sys.stderr.isatty() and not as_json else None
    try:
        result = check_corpus(
            corpus,
            entrypoint,
            jobs=jobs,
            executor=executor,
            executor_name=f"dask ({dask})" if dask else None,
            warm=warm,
            isolation=isolation,
            batch_size=batch_size,
            timeout=timeout,
            ordering=ordering,
            raise_as=classes,
            allow_commands=allow_command,
            on_start=progress.start if progress else None,
            on_result=progress.advance if progress else None,
        )
    except CorpusError as exc:
        fail(f"Invalid corpus: {sanitize_text(str(exc))}", 2, error="invalid_corpus")
    except RaiseAsClassError as exc:  # likewise for a --raise-as class: one line, not one per bundle
        detail = sanitize_text(exc.detail, keep=(exc.spec,))
        fail(
            f"Unable to resolve --raise-as class for {exc.key} ({exc.spec}): {detail}",
            2,
            error="raise_as_unresolvable",
        )
    except EntrypointError as exc:  # no bundle could be replayed: one line, not one per bundle
        detail = sanitize_text(str(exc), keep=(entrypoint,))
        fail(f"Unable to resolve entrypoint {entrypoint}: {detail}", 2, error=UNRESOLVED)
    except ImportError as exc:  # fsspec or a filesystem's package is missing (stepfork-trace[remote])
        fail(sanitize_text(str(exc)), 2, error="missing_dependency")
    finally:
        if progress is not None:
            progress.stop()
        if close is not None:
            close()
    try:
        if junit is not None:
            result.write_junit(junit)
        if receipts is not None:
            result.write_receipts(receipts)
    except OSError as exc:
        fail(f"Cannot write the check's reports: {exc}", 2, error="write_failed")
    exit_with_result(result, as_json=as_json)


def _check_outputs(corpus: str, junit: Path | None, receipts: Path | None, *, overwrite: bool) -> None:
    """Exit 2 with one line when ``--junit`` or ``--receipts`` may not be written (the shared rule,
    :func:`stepfork.trace._outputs.output_target_problem`): inside a bundle directory, a directory where
    the JUnit file goes (or a file where the receipts directory goes), or, without ``--overwrite``, an
    existing file that is not an earlier Stepfork JUnit report / receipt."""
    from stepfork.analysis.check import CorpusError, is_junit_file, receipt_file_name, resolve_corpus
    from stepfork.analysis.export import is_receipt_file
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace._outputs import output_target_problem

    problems = []
    if junit is not None:
        problems.append(
            output_target_problem(
                junit, what="the JUnit report", overwrite=overwrite, is_previous=is_junit_file
            )
        )
    if receipts is not None:
        problems.append(
            output_target_problem(receipts, what="the receipts", overwrite=overwrite, directory=True)
        )
        if receipts.is_dir() and problems[-1] is None:
            try:
                bundles = resolve_corpus(corpus)
            except (CorpusError, ImportError, OSError):
                bundles = []  # check_corpus reports it in its own words
            for bundle in bundles:
                problem = output_target_problem(
                    receipts / receipt_file_name(bundle),
                    what="the receipt",
                    overwrite=overwrite,
                    is_previous=is_receipt_file,
                )
                if problem is not None:
                    problems.append(problem)
                    break
    for problem in problems:
        if problem is not None:
            fail(sanitize_text(problem), 2, error="output_refused")


class _Progress:
    """A rich progress bar on stderr: bundles checked of the corpus, with diverged so far."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn("Checking"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[diverged]} diverged"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task: Any = None
        self._diverged = 0

    def start(self, total: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("check", total=total, diverged=0)

    def advance(self, verdict: Any) -> None:
        if verdict.outcome == "failed":
            self._diverged += 1
        self._bar.update(self._task, advance=1, diverged=self._diverged)

    def stop(self) -> None:
        self._bar.stop()


def register(app: typer.Typer) -> None:
    """Add the ``check`` command to ``app``."""
    app.command("check")(check)
