"""``check_corpus``: replay every bundle of a corpus against a candidate build (issue 17, ``stepfork check``).

Each bundle is replayed frozen, in isolation, through the entrypoint, with the verdicts of ``stepfork
replay``. The corpus is cut into batches; a batch is one task (``_runner.check_batch``), replayed by a
worker process forked from a zygote that imported the entrypoint once, many bundles per worker
(``_batch``: a crash or hang costs only its own bundle, a replay that changes the agent's state sends
the next bundle to a fresh worker; timeout per bundle). Work is scheduled only through a
``concurrent.futures.Executor``: by default a pool of threads here that keeps twice ``jobs`` batches asked
of the zygote, which replays ``jobs`` at once in ``jobs`` worker processes and hands the next waiting batch to
a worker as soon as it finishes one (no worker waits for this process); a Dask cluster's
``Client.get_executor()`` to scale out (``dask_executor``).
"""

from __future__ import annotations

import functools
import glob
import math
import os
import queue
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from stepfork.analysis.check._result import BundleVerdict, CheckResult

__all__ = ["BundleVerdict", "CheckResult", "CorpusError", "check_corpus", "resolve_corpus"]

_GLOB_CHARS = frozenset("*?[")
ISOLATION = ("worker", "bundle")
# bundles per task at most; batches shrink towards the end of the corpus (_batches), down to _MIN_BATCH
_MAX_BATCH = 256
_MIN_BATCH = 8


def _batches(count: int, workers: int, size: int | None = None) -> list[range]:
    """The corpus's indices ``0..count-1`` cut into tasks: ``size`` each when given, else shrinking sizes
    (guided self-scheduling, as OpenMP's ``guided``): each batch a quarter of what is left per worker,
    between :data:`_MIN_BATCH` and :data:`_MAX_BATCH` bundles. Big batches first keep the tasks few; small
    ones last let the workers end together (a worker that got slower bundles, or less of the CPU, takes
    fewer of them) and move the progress bar towards the end."""
    batches: list[range] = []
    start = 0
    while start < count:
        step = size or min(_MAX_BATCH, max(_MIN_BATCH, math.ceil((count - start) / (4 * workers))))
        batches.append(range(start, min(start + step, count)))
        start += step
    return batches


class CorpusError(ValueError):
    """The corpus names no bundle: a missing path, an empty directory or glob, an unreadable list file, or
    a file that is not a list of bundles (a Python file, a line that names no ``*.sftrace`` bundle)."""


def _is_url(text: str) -> bool:
    return "://" in text


def resolve_corpus(corpus: str | os.PathLike[str] | Iterable[str]) -> list[str]:
    """The bundles a corpus names, sorted (a list is kept in its order).

    Args:
        corpus: a directory (searched recursively for ``*.sftrace`` bundle directories), a glob
            (``runs/**/*.sftrace``, recursive), a file listing one bundle path or URL per line (blank lines
            and ``#`` comments skipped; relative paths are relative to the file), a URL of a prefix on
            object storage (every ``*.sftrace`` below it; ``stepfork-trace[remote]``), or an iterable of
            bundle paths.

    Returns:
        Bundle paths (as strings) or URLs.

    Raises:
        CorpusError: nothing is there, or it names no bundle.
    """
    if not isinstance(corpus, (str, os.PathLike)):
        bundles = [str(b) for b in corpus]
        if not bundles:
            raise CorpusError("the corpus lists no bundle")
        return bundles
    text = os.fspath(corpus)
    if _is_url(text):
        from stepfork.trace.remote import list_bundles

        found = list_bundles(text)
    elif _GLOB_CHARS & set(text):
        found = sorted(p for p in glob.glob(text, recursive=True) if p.endswith(".sftrace"))
    else:
        path = Path(text)
        if path.is_dir():
            if path.name.endswith(".sftrace"):
                found = [str(path)]
            else:
                found = sorted(str(p) for p in path.rglob("*.sftrace") if p.is_dir())
        elif path.is_file():
            found = _read_list(path)
        else:
            raise CorpusError(f"no such corpus: {text} (a directory, a glob, a file listing bundles, a URL)")
    if not found:
        raise CorpusError(f"the corpus {text} names no *.sftrace bundle")
    return found


def python_file_problem(corpus: str | os.PathLike[str]) -> str | None:
    """Why ``corpus`` is no corpus when it is an existing Python file (a test or script given where the
    bundles go), one line; else None."""
    path = Path(corpus)
    if path.suffix not in (".py", ".pyw", ".ipynb") or not path.is_file():
        return None
    hint = "; to run an exported test use `stepfork run`" if path.name.startswith("test_") else ""
    return (
        f"{path} is a Python file, not a corpus: `stepfork check` takes a directory of bundles, a glob, "
        f"a file listing *.sftrace bundles or a URL prefix{hint}"
    )


_LIST_FORM = "a corpus file lists one *.sftrace bundle path or URL per line"


def _read_list(path: Path) -> list[str]:
    """The bundles a list file names. Every entry must name a bundle (a path ending in ``.sftrace``, as the
    bundle reader requires, or a URL): a file of something else (a test, a script) is refused on its first
    such line rather than read as a list of missing bundles."""
    problem = python_file_problem(path)
    if problem is not None:
        raise CorpusError(problem)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"cannot read the corpus list {path}: {exc}") from exc
    bundles = []
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not _is_url(line) and not line.rstrip("/\\").endswith(".sftrace"):
            shown = line if len(line) <= 60 else line[:57] + "..."
            raise CorpusError(f"{path}:{number}: {shown!r} is not a bundle path ({_LIST_FORM})")
        if _is_url(line) or Path(line).is_absolute():
            bundles.append(line)
        else:
            bundles.append(str(path.parent / line))
    return bundles


def dask_executor(address: str) -> tuple[Executor, Callable[[], None]]:
    """A Dask distributed cluster as an Executor: ``(Client(address).get_executor(), close)``.

    Workers must be able to import stepfork and the entrypoint (the same environment and import root).

    Raises:
        ImportError: ``distributed`` is not installed (``pip install distributed``).
        OSError: the scheduler cannot be reached.
    """
    try:
        from distributed import Client  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError as exc:
        raise ImportError("--dask needs Dask's distributed package: pip install distributed") from exc
    client = Client(address, timeout=30)
    executor: Executor = client.get_executor(pure=False)
    return executor, client.close


def task_config(
    entrypoint: str,
    *,
    import_root: str | os.PathLike[str] | None = None,
    ordering: str = "auto",
    raise_as: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    warm_bundle: str | None = None,
    isolation: str = "worker",
    workers: int | None = None,
    allow_commands: Iterable[str] = (),
) -> dict[str, Any]:
    """The JSON configuration every task of one :func:`check_corpus` run gets (``_runner.check_batch``);
    a process keeps one zygote per distinct configuration (a local run adds a ``run`` key of its own: its
    zygote is its alone). Arguments as :func:`check_corpus`
    (``warm_bundle``: the bundle the zygote replays before forking, or None; ``workers``: worker processes
    the zygote runs at once, queueing further batches, or None: one per batch asked of it at once, what an
    executor of other processes needs); ``import_root`` defaults to the current directory, made absolute."""
    root = os.path.abspath(import_root if import_root is not None else os.getcwd())
    return {
        "entrypoint": entrypoint,
        "import_root": root,
        "ordering": ordering,
        "raise_as": dict(raise_as) if raise_as else None,
        "timeout": float(timeout),
        "warm_bundle": warm_bundle,
        "isolation": isolation,
        "workers": workers,
        "allow_commands": list(allow_commands),
    }


def _raise_unresolvable(
    entrypoint: str, raise_as: Mapping[str, str] | None, answer: dict[str, Any], *, remote: bool
) -> None:
    """Raise the ``EntrypointError`` of :func:`check_corpus` from a verdict saying the entrypoint, or a
    ``raise_as`` class (a ``RaiseAsClassError`` then), cannot be resolved (``remote``: a caller's
    executor, so the message names the process that said so)."""
    from stepfork.analysis.check._worker import UNRESOLVABLE
    from stepfork.replay import EntrypointError
    from stepfork.replay.raise_as import RaiseAsClassError

    detail = str(answer.get("detail") or "")
    key = answer.get("raise_as_key")
    if key is not None:
        detail = detail.removeprefix(f"raise_as[{key!r}]: ")
    if remote and answer.get("host"):
        detail += f" (in the process that replays, {answer['host']})"
    if key is not None:
        spec = str((raise_as or {}).get(key, ""))
        raise RaiseAsClassError(str(key), EntrypointError(detail, code=str(answer[UNRESOLVABLE]), spec=spec))
    raise EntrypointError(detail, code=str(answer[UNRESOLVABLE]), spec=entrypoint)


def _teller(arrivals: queue.SimpleQueue[Any], offset: int) -> Callable[[int, list[dict[str, Any]]], None]:
    """``check_batch``'s ``on_verdicts`` for the batch starting at corpus index ``offset``: the verdicts go
    to ``arrivals`` as ``(corpus index of the first, answers)``, one item per call (per round of the
    zygote's loop, not per bundle: the thread of :func:`check_corpus` wakes once for them)."""

    def tell(position: int, answers: list[dict[str, Any]]) -> None:
        arrivals.put((offset + position, answers))

    return tell


def check_corpus(
    corpus: str | os.PathLike[str] | Iterable[str],
    entrypoint: str,
    *,
    jobs: int | None = None,
    executor: Executor | None = None,
    timeout: float = 60.0,
    ordering: str = "auto",
    raise_as: Mapping[str, str] | None = None,
    import_root: str | os.PathLike[str] | None = None,
    executor_name: str | None = None,
    warm: bool = False,
    isolation: str = "worker",
    batch_size: int | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[BundleVerdict], None] | None = None,
    allow_commands: Iterable[str] | None = None,
) -> CheckResult:
    """Replay every bundle of ``corpus`` frozen through ``entrypoint`` and report each verdict.

    Args:
        corpus: see :func:`resolve_corpus`.
        entrypoint: trusted local ``MODULE:FUNCTION`` (imported once per process that runs replays).
        jobs: replays at once with the default executor (default: the number of CPUs).
        executor: any ``concurrent.futures.Executor`` (e.g. Dask's ``Client.get_executor()``); it is not
            shut down here. Its workers must import stepfork and the entrypoint.
        timeout: seconds per replay; a longer one is killed (verdict COULD NOT EXECUTE, reason timeout).
        ordering, raise_as: as ``stepfork replay`` (``raise_as``: ``{TYPE: "MODULE:CLASS"}``).
        import_root: the directory the entrypoint is imported from (default: the current directory).
        executor_name: how the report names a given executor (default: its class name).
        warm: replay the first bundle once in each zygote before forking, so every replay starts with the
            caches an SDK builds on its first request (much faster for SDK agents); module state that
            replay changes is then what every replay starts from (docs/check.md "Warm start").
        isolation: ``"worker"`` (default): a worker process replays many bundles, and a replay that changes
            the agent's module state, environment or working directory sends the next bundle to a fresh
            worker; ``"bundle"``: a fresh process per bundle, whatever the agent does (slower; for agents
            that keep behaviour in installed packages' state). docs/check.md "Isolation".
        batch_size: bundles per task (default: shrinking batches, from a quarter of the corpus per job, at
            most 256, down to 8; see :func:`_batches`).
        on_start: called with the number of bundles before any replay; on_result: with each verdict as it
            arrives, in this thread (in completion order; a progress bar). With the default executor a
            verdict arrives when its replay ends, not when its batch does; with another executor, when the
            task holding it ends.
        allow_commands: the programs every replay may start unsealed (``--allow-command``; names or paths,
            as ``ReplaySession`` takes them); any other child process the seal cannot reach is refused
            (``child_process_refused``: that bundle DIVERGED). The result and each receipt name them.

    Returns:
        A :class:`CheckResult`, verdicts in corpus order.

    Raises:
        CorpusError: the corpus names no bundle. ValueError: ``jobs`` or ``batch_size`` < 1, ``timeout`` <= 0,
        an unknown ``isolation`` or a malformed ``allow_commands`` entry. EntrypointError
        (``stepfork.replay``, a ValueError; ``code`` ``import_failed``, ``missing_attribute``,
        ``not_callable`` or ``bad_form``, ``spec`` the entrypoint): no process that replays could resolve the
        entrypoint, so no bundle was replayed; RaiseAsClassError (an EntrypointError; ``key`` the recorded
        type, ``spec`` its ``MODULE:CLASS``, ``detail`` the resolver's message), likewise for a ``raise_as``
        class. Each such process learns it once (its zygote's import, or the first replay in a fresh process)
        and answers its other bundles at once, so this comes after one import, not a replay per bundle. The
        entrypoint is never imported in this process (a Dask cluster's workers may import what this process
        cannot); where only some processes cannot resolve it (a Dask worker without the agent's code), their
        bundles are ``COULD NOT EXECUTE`` with reason ``entrypoint_unresolvable`` and the others are checked
        (docs/decisions.md).
    """
    from stepfork.analysis.check._runner import check_batch, close_runner
    from stepfork.analysis.check._worker import UNRESOLVABLE

    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if isolation not in ISOLATION:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION)}, got {isolation!r}")
    if not (timeout > 0 and math.isfinite(timeout)):  # NaN compares false both ways
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
    commands: tuple[str, ...] = ()
    if allow_commands:  # normalized here (a malformed one refused before any replay), as replay's
        from stepfork.replay.network import parse_allowed_command

        commands = tuple(dict.fromkeys(parse_allowed_command(c) for c in allow_commands))
    bundles = resolve_corpus(corpus)
    workers = jobs or os.cpu_count() or 1
    config = task_config(
        entrypoint,
        import_root=import_root,
        ordering=ordering,
        raise_as=raise_as,
        timeout=timeout,
        warm_bundle=bundles[0] if warm else None,
        isolation=isolation,
        workers=workers if executor is None else None,  # this process's zygote runs `jobs` workers
        allow_commands=commands,
    )
    batches = _batches(len(bundles), workers, batch_size)
    if on_start is not None:
        on_start(len(bundles))
    start = time.perf_counter()
    local = executor is None
    results: dict[int, BundleVerdict] = {}
    unresolvable: list[dict[str, Any]] = []  # answers saying the entrypoint cannot be resolved there
    with ExitStack() as stack:
        if executor is None:
            # twice `jobs` batches asked at once: a worker that ends one finds the next waiting in the zygote
            threads = min(len(batches), 2 * workers)
            pool = executor = ThreadPoolExecutor(threads, thread_name_prefix="stepfork-check")
            # at the normal end every task is done and the pool's threads wait for work: they end on their
            # own, not joined here (1-2 ms at the end of every check); after an error they are joined
            stack.push(lambda kind, error, trace: pool.shutdown(wait=kind is not None))
            # this run's own zygote: another check_corpus running in this process (a thread of a notebook or
            # a service) neither shares it nor has it closed when that one ends
            config["run"] = uuid.uuid4().hex
            # runs before the pool's shutdown (last in, first out): on Ctrl-C the zygote's end stops the
            # replays the pool's threads wait for; at the normal end every task is already done
            stack.callback(close_runner, config)
            label = f"local ({workers} job{'s' if workers != 1 else ''})"
            if on_result is not None:
                config["progress"] = True  # the zygote sends verdicts as they come, not a batch at a time
        else:
            label = executor_name or type(executor).__name__
        # what the main thread waits for: a finished task (its Future), or, from a task running in this
        # process, one verdict as it comes ((index, answer)); on_result is called here, in this thread
        arrivals: queue.SimpleQueue[Any] = queue.SimpleQueue()
        futures: dict[Future[list[dict[str, Any]]], range] = {}
        for batch in batches:
            task: Callable[..., list[dict[str, Any]]] = check_batch
            if local and on_result is not None:
                task = functools.partial(check_batch, on_verdicts=_teller(arrivals, batch.start))
            future = executor.submit(task, [bundles[i] for i in batch], config)
            futures[future] = batch
            future.add_done_callback(arrivals.put)
        told: dict[int, BundleVerdict] = {}  # verdicts on_result heard ahead of their task's end
        try:
            for _ in range(len(futures)):
                item = arrivals.get()
                while not isinstance(item, Future):  # verdicts ahead of their task's end
                    first, answers = item
                    for index, answer in enumerate(answers, first):
                        if on_result is not None and index not in told:
                            told[index] = BundleVerdict.from_json(answer)
                            on_result(told[index])
                    item = arrivals.get()
                for index, answer in zip(futures[item], item.result(), strict=True):
                    if answer.get(UNRESOLVABLE):
                        unresolvable.append(answer)
                    early = told.pop(index, None)  # the same answer, already read
                    results[index] = early or BundleVerdict.from_json(answer)
                    if on_result is not None and early is None:
                        on_result(results[index])
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    if len(unresolvable) == len(bundles):  # nothing was replayed anywhere: bad input, not a verdict
        _raise_unresolvable(entrypoint, raise_as, unresolvable[0], remote=not local)
    wall_ms = (time.perf_counter() - start) * 1000
    return CheckResult(
        corpus=os.fspath(corpus) if isinstance(corpus, (str, os.PathLike)) else f"{len(bundles)} bundles",
        entrypoint=entrypoint,
        executor=label,
        verdicts=tuple(results[i] for i in range(len(bundles))),
        wall_ms=wall_ms,
        allow_commands=commands,
    )
