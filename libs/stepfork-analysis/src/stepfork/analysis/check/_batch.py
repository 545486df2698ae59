"""A batch worker of ``stepfork check``: one child forked from the zygote replays many bundles in turn.

A fork per bundle costs about 10 ms of CPU (the fork, the copy-on-write faults as the replay touches the
zygote's pages, the exit), against 0.3-1.3 ms for a whole small replay: a corpus spent nearly all its time
isolating. So a child forked from the zygote (:mod:`._zygote`, which imported the entrypoint once) replays a
batch, one bundle after another, and writes one verdict line per bundle as soon as it has it; when the batch
ends with the agent's state as the zygote left it, the child waits for the zygote's next batch instead of
exiting (:func:`serve_batches`), so a worker is forked once per job, not once per batch. Isolation is kept
where it decides a verdict:

- a crash or a hang ends the child; the zygote gives that bundle its ``crash`` / ``timeout`` answer and
  forks a fresh child for the rest of the batch (the per-bundle timeout restarts at every verdict line);
- after each replay the state probe (:mod:`._state`) compares the agent's state with the zygote's;
  when the replay changed it (or left a thread running, or the probe cannot tell), the child reports the
  verdict and exits, so the next bundle starts from the zygote's state again, as in a fork per bundle;
- ``isolation="bundle"`` makes every child exit after one bundle: a fork per bundle, as before.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import IO, Any, NamedTuple

from stepfork.analysis._zygote.lines import parse_line

__all__ = ["BatchWorker", "ImportWatch", "prepare", "serve_batches"]


class ImportWatch:
    """The modules a replay imports, without copying ``sys.modules`` around every replay.

    An SDK agent has 1,000-4,000 modules loaded; ``set(sys.modules)`` before and after each replay cost
    about 0.15 ms per bundle with the Anthropic SDK, 7% of its replay. A finder first on ``sys.meta_path``
    (:meth:`find_spec` always returns None, so the import goes on unchanged) hears the name of every module
    the import system loads; when ``len(sys.modules)`` then equals the known modules plus those heard, that
    is the whole change. Anything else (a module put into or deleted from ``sys.modules`` by hand) falls
    back to comparing every name. Missed only: a replay that both inserts and deletes the same number of
    modules by hand, without the import system; the state probe still sees the agent's own modules.

    Use: :meth:`install` once per worker, then :meth:`new_modules` after each replay.
    """

    def __init__(self, known: AbstractSet[str] | None = None) -> None:
        # ``known``: the names loaded now, taken by the zygote (prepare): never changed in place here
        self.known: AbstractSet[str] = set(sys.modules) if known is None else known
        self.heard: list[str] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        """Note ``name`` (the import system asks finders only for modules not in ``sys.modules``); return
        None so the next finder loads it."""
        self.heard.append(name)

    def install(self) -> None:
        """Put this finder first on ``sys.meta_path`` (this process is a forked worker: it exits with it)."""
        sys.meta_path.insert(0, self)  # a finder by protocol (find_spec)

    def new_modules(self) -> list[str]:
        """The names added to ``sys.modules`` since the last call (or since construction), sorted."""
        loaded = sys.modules
        heard, self.heard = self.heard, []
        new = {name for name in heard if name in loaded and name not in self.known}
        if len(loaded) != len(self.known) + len(new):  # changed by hand: compare every name
            current = set(loaded)
            new = current - self.known
            self.known = current
        elif new:  # a new set: the zygote's (prepare) is never changed in place
            self.known = self.known | new
        return sorted(new)


def _probe(names: list[str]) -> Any:
    """The state baseline (:class:`._state.Baseline`) of the agent's modules ``names``, or None when
    it cannot be taken (then every replay restarts the child)."""
    from stepfork.analysis.check._state import Baseline

    try:
        return Baseline(names)
    except Exception:  # too big, too deep, or a value that raises when read (a proxy of a web framework)
        return None


def _unchanged(baseline: Any) -> bool:
    """Whether the agent's state still compares equal to ``baseline``'s; False when it cannot be told."""
    try:
        return bool(baseline.unchanged())
    except Exception:  # as _probe
        return False


class _Start(NamedTuple):
    """What a batch worker starts from: the resolved ``(entrypoint, raise_as)`` (None when they cannot be
    resolved: each verdict then says why), the agent's module names, the state baseline (None: every
    replay restarts the worker) and the names of the loaded modules (:class:`ImportWatch`)."""

    targets: tuple[Any, Any] | None
    names: list[str]
    baseline: Any
    modules: frozenset[str]

    @classmethod
    def of(cls, config: dict[str, Any]) -> _Start:
        """Take them in this process, for ``config``."""
        from stepfork.analysis.check._state import agent_module_names
        from stepfork.analysis.check._worker import resolve_targets
        from stepfork.replay.entrypoint import EntrypointError

        # Resolved once per worker (or once in the zygote, :func:`prepare`), not per bundle: a replay that
        # rebinds them changes the agent's module state, which the probe sees (the worker then exits), so a
        # surviving worker would resolve the same objects again
        try:
            targets = resolve_targets(config)
        except EntrypointError:
            targets = None
        names = agent_module_names(config.get("import_root"), entrypoint=config.get("entrypoint"))
        baseline = None if config.get("isolation") == "bundle" else _probe(names)
        return cls(targets, names, baseline, frozenset(sys.modules))


# (the configuration, what its workers start from), taken by the zygote before it forks (prepare)
_prepared: tuple[dict[str, Any], _Start] | None = None


def prepare(config: dict[str, Any]) -> None:
    """Take, in the zygote, what every batch worker it forks for ``config`` starts from (:class:`_Start`):
    the zygote's state is the state each worker starts in, so one baseline serves them all. Taken in each
    worker instead, it read every loaded module and the agent's state once more per fork, copying the
    zygote's pages that hold them (copy on write): with the OpenAI and Anthropic SDKs loaded (4,000 modules),
    about 2,000 page faults and 7-11 ms before each worker's first replay, 600 faults and 2.8 ms for the
    quickstart agent alone (docs/performance.md, "Run I"), paid again for each fresh worker that replaces
    one a replay changed. Called again whenever the zygote's state changes (it imports what replays imported
    lazily, ``BatchZygote.warm``).

    First it seals the zygote's network for good (``stepfork.replay.network.seal_process``), so that every
    worker starts with the seal's hooks in place: a check replays only frozen, sealed sessions, and
    installing and removing the hooks around each replay cost about 30 us per bundle (docs/performance.md,
    "Run J"). The state baseline is taken after, with the hooks in place, as each replay leaves them."""
    from stepfork.replay.network import seal_process

    global _prepared
    _prepared = None
    seal_process()
    with contextlib.suppress(Exception):  # each worker then takes its own, and fails as it did before
        _prepared = (config, _Start.of(config))


class BatchWorker:
    """The replaying side of one batch worker (a child forked by the zygote): the agent's module names and
    the state snapshot to compare with (taken by the zygote before it forked this process, :func:`prepare`,
    else here before the first replay), and the import finder.

    Args:
        config: the check configuration (``entrypoint``, ``import_root``, ``ordering``, ``raise_as``,
            ``isolation``: ``"worker"`` (default) or ``"bundle"``).
    """

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        # what the zygote took before forking this process (prepare), else taken here. With no targets, each
        # verdict_of resolves (and fails) per bundle, as before
        start = _prepared[1] if _prepared is not None and _prepared[0] is config else _Start.of(config)
        self.targets = start.targets
        self.names = start.names
        self.baseline = start.baseline
        self.import_root = config.get("import_root")
        self.entrypoint = config.get("entrypoint")
        self.pid = os.getpid()
        self.watch = ImportWatch(start.modules)
        self.watch.install()

    def replay(self, bundles: list[str], send: Callable[[dict[str, Any]], None]) -> bool:
        """Replay ``bundles`` in this process and ``send`` one answer per bundle, in order, stopping early
        when the next replay could no longer start from the zygote's state.

        Args:
            bundles: paths or URLs, in order.
            send: writes one answer (a JSON dict) to the zygote.

        Returns:
            True when this worker may replay another batch (the last replay left the state as the zygote
            had it), False when it must exit (it said ``restart`` in its last answer).

        Each answer is :func:`._worker.verdict_of`'s verdict plus ``worker`` (this process's pid),
        ``modules`` (modules the replay imported, which the zygote preloads before its next fork),
        ``stderr_at`` (the offset where the next bundle's stderr starts, so a crash is described by its own
        last line) and ``restart`` (True: this child exits now and the zygote forks another for the rest).
        A replay that raises a BaseException ends the child (the zygote answers ``crash`` for that bundle),
        as the process of a fork per bundle would end.
        """
        from stepfork.analysis.check._state import agent_module_names
        from stepfork.analysis.check._worker import verdict_of

        main = threading.current_thread()
        for bundle in bundles:
            answer = verdict_of(self.config, bundle, self.targets)
            if os.getpid() != self.pid:  # the agent forked and its child returned here: it must not answer
                os._exit(0)
            imported = self.watch.new_modules()
            own = agent_module_names(self.import_root, imported, self.entrypoint) if imported else []
            # the zygote preloads what a replay imported lazily (an SDK's modules), never the agent's own:
            # importing those runs the agent's import-time code outside any session
            answer["modules"] = [name for name in imported if name not in own]
            answer["worker"] = self.pid
            for thread in threading.enumerate():  # as interpreter shutdown would: wait for non-daemon threads
                if thread is not main and not thread.daemon:
                    thread.join()
            restart = (
                self.baseline is None
                or threading.active_count() > 1  # a daemon thread still runs: it would reach the next replay
                or bool(own)  # a new agent module: not in the baseline
                or any(getattr(sys.modules.get(n), "__spec__", None) is None for n in imported)  # by hand
                or not _unchanged(self.baseline)
            )
            answer["restart"] = restart
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            try:
                answer["stderr_at"] = os.lseek(2, 0, os.SEEK_CUR)
            except OSError:  # not the zygote's file (fd 2 is always a file there): crashes described whole
                answer["stderr_at"] = 0
            answer["done_at"] = time.monotonic()  # the zygote reads verdicts in gathers (_GATHER)
            send(answer)
            if restart:
                return False
        return True


def serve_batches(
    config: dict[str, Any], bundles: list[str], send: Callable[[dict[str, Any]], None], jobs: IO[bytes]
) -> None:
    """A worker's life: replay ``bundles``, then each further batch the zygote writes to ``jobs`` (one JSON
    list of bundles per line), until a replay says ``restart`` or ``jobs`` ends (the zygote stops). The zygote
    sends a batch only to a worker whose last answer did not say ``restart``."""
    worker = BatchWorker(config)
    while worker.replay(bundles, send):
        line = jobs.readline()
        if not line:
            return
        bundles = [str(b) for b in parse_line(line)]
