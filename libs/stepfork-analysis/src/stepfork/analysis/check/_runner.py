"""Where ``stepfork check`` replays a batch of bundles: :func:`check_batch`, the task every executor runs.

The task is a plain module-level function of JSON arguments, so any ``concurrent.futures.Executor`` can
run it: the default pool in this process, or a Dask cluster's ``Client.get_executor()`` (the function is
pickled by reference: Dask workers import this module and the entrypoint themselves).

In each process that runs tasks, one :class:`CheckRunner` per configuration keeps a zygote (:mod:`._zygote`,
on the process ``minimize`` uses too, :mod:`stepfork.analysis._zygote`): the entrypoint is imported once,
and a batch is replayed by a child forked from it (:mod:`._batch`: many bundles per child; a crash or hang
costs only its own bundle, a replay that changes the agent's state sends the next bundle to a fresh
child), with a timeout per bundle. Where the zygote cannot run (no ``fork``, an entrypoint that starts
threads on import), each replay runs in a fresh ``python -m stepfork.analysis.check._worker`` instead; both
give the same verdict.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from stepfork.analysis._zygote.client import (
    FORCE_SUBPROCESS_ENV,
    GRACE,
    ZygoteBroken,
    ZygoteClient,
    ended_within,
)
from stepfork.analysis._zygote.server import died
from stepfork.analysis.check._worker import UNRESOLVABLE, VERDICT_LINE, could_not_execute

ZYGOTE = "stepfork.analysis.check._zygote"
"""The module of ``check``'s zygote (its task: a forked worker replays batches)."""
WORKER = "stepfork.analysis.check._worker"
"""The module of one replay in a fresh process (the fallback)."""

__all__ = ["CheckRunner", "check_batch", "check_bundle", "close_runner", "close_runners"]


def _identity(message: dict[str, Any]) -> dict[str, Any]:
    return message


def _stopped() -> dict[str, Any]:
    verdict = could_not_execute("check_error", "the check was stopped before this bundle's replay ended")
    verdict["duration_ms"] = 0.0
    return verdict


def _from_zygote(message: dict[str, Any], timeout: float) -> dict[str, Any]:
    """A zygote answer as a verdict: its ``timeout`` and ``crash`` answers become could-not-execute."""
    kind = message.get("kind")
    if kind == "timeout":
        return could_not_execute("timeout", f"the replay ran longer than {timeout:g} s and was killed")
    if kind == "crash":
        return could_not_execute("check_error", f"the replay's process died: {message.get('detail')}")
    message.pop("id", None)
    return message


class CheckRunner:
    """Replays bundles for one configuration (see :func:`check_bundle`); thread-safe, many replays at once.

    Args:
        config: ``entrypoint``, ``import_root``, ``ordering``, ``raise_as``, ``timeout`` (seconds per
            replay), ``workers`` (worker processes at once, or None: one per batch asked for at once).
    """

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = {**config, "mode": "frozen", "expected": None, "has_expected": False}
        self.timeout = float(config["timeout"])
        self._lock = threading.Lock()
        self._zygote: ZygoteClient | None = None
        self._ready: bool | None = None
        self._closed = False  # closed (Ctrl-C, the end of the check): no replay starts any more
        # replays running in fresh processes (where the zygote cannot run), killed by close()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._procs_lock = threading.Lock()  # not _lock: that one is held while the zygote starts
        self._outstanding = 0  # bundles sent to the zygote and not answered yet (batches may queue there)
        # the verdict of every bundle once this process knows the entrypoint cannot be resolved here (the
        # zygote's import, or a fresh process's, failed): given at once, no bundle read or replayed
        self._unresolvable: dict[str, Any] | None = None
        workers = config.get("workers")
        # where the zygote cannot run, `workers` subprocesses at once (more tasks than that may be running)
        self._slots: threading.BoundedSemaphore | None = None
        if isinstance(workers, int) and workers > 0:
            self._slots = threading.BoundedSemaphore(workers)
        forkable = hasattr(os, "fork") and sys.platform.startswith(("linux", "darwin"))
        if forkable and not os.environ.get(FORCE_SUBPROCESS_ENV):
            try:
                self._zygote = ZygoteClient(ZYGOTE, self.config, _identity, reap_in_background=True)
            except OSError:
                self._zygote = None

    def _usable_zygote(self) -> ZygoteClient | None:
        with self._lock:
            if self._zygote is not None and self._ready is None:
                # the entrypoint's import gets at least a minute, whatever the per-replay timeout
                self._ready = self._zygote.wait_ready(max(self.timeout, 60.0))
                if not self._ready:
                    self._learn(self._zygote.refusal.get("verdict"))
                    self._zygote.close()
            return self._zygote if self._ready else None

    def run(
        self, bundles: list[str], on_verdicts: Callable[[int, list[dict[str, Any]]], None] | None = None
    ) -> list[dict[str, Any]]:
        """Replay ``bundles`` (paths or URLs) and return their verdicts in order (the form of
        ``_worker.verdict_of``, plus ``duration_ms``: wall time of that bundle's replay in its worker,
        milliseconds). ``on_verdicts(position, verdicts)``: called with verdicts as they come (those of
        ``bundles[position:position + len(verdicts)]``), before the batch ends, from a thread of this runner
        (the zygote client's reader, or the caller's); with the zygote, only when the configuration has
        ``"progress": true`` (it then sends verdicts ahead, a list per round of its loop)."""
        zygote = self._usable_zygote()
        if self._unresolvable is not None:
            return [self._known_unresolvable() for _ in bundles]
        got: list[dict[str, Any]] = []  # verdicts the zygote sent ahead of the batch's answer

        def part(answers: list[Any]) -> None:
            start = len(got)
            got.extend(self._from_batch(dict(answer)) for answer in answers)
            if on_verdicts is not None:
                on_verdicts(start, got[start:])

        if zygote is not None:
            with self._lock:
                self._outstanding += len(bundles)
                # a batch may wait in the zygote behind the others (its worker cap): every bundle ahead of
                # it, one after another at worst, bounds when its answer is due
                wait = self.timeout * self._outstanding + GRACE
            try:
                answer = zygote.run(list(bundles), wait, part)
                verdicts = answer["verdicts"]
                if len(verdicts) == len(bundles):
                    for verdict in verdicts:
                        self._learn(verdict)
                    return [self._from_batch(v) for v in verdicts]
            except ZygoteBroken:
                pass
            finally:
                with self._lock:
                    self._outstanding -= len(bundles)
        verdicts = list(got)  # told already: kept, the rest replayed here
        slots = self._slots or contextlib.nullcontext()
        for bundle in bundles[len(got) :]:  # where the zygote cannot run: a fresh process per bundle
            if self._closed:  # stopped (Ctrl-C): the zygote's end is not a reason to replay elsewhere
                verdicts.append(_stopped())
                continue
            with slots:  # closed while waiting here: _run_in_subprocess answers _stopped()
                if self._unresolvable is not None:  # another replay learned it meanwhile
                    verdicts.append(self._known_unresolvable())
                    continue
                verdicts.append(self._timed_subprocess(bundle))
            self._learn(verdicts[-1])
            if on_verdicts is not None:
                on_verdicts(len(verdicts) - 1, verdicts[-1:])
        return verdicts

    def _learn(self, verdict: Any) -> None:
        """Remember ``verdict`` when it says the entrypoint cannot be resolved in this process's replays
        (:data:`._worker.UNRESOLVABLE`): every later bundle gets it without a replay."""
        if isinstance(verdict, dict) and verdict.get(UNRESOLVABLE) and self._unresolvable is None:
            self._unresolvable = {k: v for k, v in verdict.items() if k not in ("duration_ms", "worker")}

    def _known_unresolvable(self) -> dict[str, Any]:
        assert self._unresolvable is not None
        return {**self._unresolvable, "duration_ms": 0.0}

    def _from_batch(self, answer: dict[str, Any]) -> dict[str, Any]:
        duration = answer.pop("duration_ms", None)
        verdict = _from_zygote(answer, self.timeout)
        verdict["duration_ms"] = duration
        return verdict

    def _timed_subprocess(self, bundle: str) -> dict[str, Any]:
        start = time.perf_counter()
        verdict = self._run_in_subprocess(bundle)
        verdict["duration_ms"] = round((time.perf_counter() - start) * 1000, 3)
        return verdict

    def _run_in_subprocess(self, bundle: str) -> dict[str, Any]:
        # Output goes to files, not pipes, and the replay gets a process group of its own: a process the
        # agent forked and left running would hold pipes open (the replay then looked like a timeout), and
        # is killed with the group when the replay ends, as the zygote kills a worker's (_zygote.server.kill).
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            with self._procs_lock:  # close() kills what is registered here; nothing starts after it
                if self._closed:
                    return _stopped()
                proc = subprocess.Popen(
                    [sys.executable, "-m", WORKER],
                    stdin=subprocess.PIPE,
                    stdout=out,
                    stderr=err,
                    cwd=self.config.get("import_root"),
                    start_new_session=True,
                )
                self._procs.add(proc)
            try:
                assert proc.stdin is not None
                with contextlib.suppress(OSError):  # it died at once: its exit status tells
                    proc.stdin.write(json.dumps({**self.config, "bundle": bundle}).encode())
                    proc.stdin.close()
                ended = ended_within(proc, self.timeout)
            finally:
                _kill_group(proc)
                proc.wait()
                with self._procs_lock:
                    self._procs.discard(proc)
            if not ended:
                return _from_zygote({"kind": "timeout"}, self.timeout)
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read().decode("utf-8", "replace")
        if self._closed:  # killed by close() (Ctrl-C): no verdict of this replay
            return _stopped()
        lines = [line for line in stdout.splitlines() if line.startswith(VERDICT_LINE)]
        if not lines:
            last = (stderr.strip().splitlines() or ["no output"])[-1][:200]
            return _from_zygote({"kind": "crash", "detail": died(last, proc.returncode)}, self.timeout)
        try:
            verdict = json.loads(lines[-1].removeprefix(VERDICT_LINE))
        except ValueError:
            verdict = None
        if not isinstance(verdict, dict) or verdict.get("kind") != "verdict":
            return _from_zygote({"kind": "crash", "detail": "malformed verdict line"}, self.timeout)
        return verdict

    def close(self) -> None:
        """Stop the zygote and kill the replays still running (in the zygote's children or in fresh
        processes), and start no replay after; idempotent."""
        with self._procs_lock:
            self._closed = True
            running = list(self._procs)
        for proc in running:  # its thread reaps it and answers _stopped()
            _kill_group(proc)
        if self._zygote is not None:
            self._zygote.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of ``proc`` (its own: ``start_new_session``): the replay, and what the
    agent forked and left running in it, which would hold the replay's files and run on; then ``proc``."""
    killpg = getattr(os, "killpg", None)  # POSIX; elsewhere the process alone
    if killpg is not None:
        with contextlib.suppress(OSError):  # the group is gone already
            killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()


_RUNNERS: dict[str, CheckRunner] = {}
_RUNNERS_LOCK = threading.Lock()


def _runner(config: dict[str, Any]) -> CheckRunner:
    key = json.dumps(config, sort_keys=True)
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(key)
        if runner is None:
            if not _RUNNERS:
                atexit.register(close_runners)  # a Dask worker's zygote goes when the worker does
            runner = _RUNNERS[key] = CheckRunner(config)
        return runner


def close_runner(config: dict[str, Any]) -> None:
    """Close the runner of ``config`` (its zygote and its running replays), if this process started one;
    the runners of other configurations (another check running in this process) go on."""
    with _RUNNERS_LOCK:
        runner = _RUNNERS.pop(json.dumps(config, sort_keys=True), None)
    if runner is not None:
        runner.close()


def close_runners() -> None:
    """Close every runner this process started (their zygotes and running replays)."""
    with _RUNNERS_LOCK:
        runners = list(_RUNNERS.values())
        _RUNNERS.clear()
    for runner in runners:
        runner.close()


def check_batch(
    bundles: list[str],
    config: dict[str, Any],
    on_verdicts: Callable[[int, list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """The task of ``stepfork check``: replay a batch of bundles with ``config`` and return their verdicts.

    Args:
        bundles: bundle paths or URLs, as listed in the corpus.
        config: JSON: ``entrypoint``, ``import_root``, ``ordering``, ``raise_as``, ``timeout`` (seconds per
            bundle), ``isolation`` (``worker`` or ``bundle``), ``warm_bundle``; ``progress`` (true: the
            zygote sends verdicts as they come, for ``on_verdicts``).
        on_verdicts: called with ``(position in bundles, verdicts)`` as verdicts come (those of
            ``bundles[position:position + len(verdicts)]``, in the form returned), from another thread,
            before this returns (a progress bar in the process that runs the task; a remote executor
            passes none: its verdicts come with the task's result). Some verdicts (a batch answered at
            once) come only with the result.

    Returns:
        One verdict dict per bundle, in order: ``_worker.verdict_of``'s plus ``bundle``,
        ``duration_ms`` (wall time of that bundle's replay in its worker process, milliseconds) and
        ``host`` (the process that ran the task, ``hostname:pid``). Never raises for a bad bundle or agent:
        those are verdicts.
    """
    host = f"{os.uname().nodename if hasattr(os, 'uname') else 'local'}:{os.getpid()}"
    tell = None
    if on_verdicts is not None:

        def tell(position: int, verdicts: list[dict[str, Any]]) -> None:
            for offset, verdict in enumerate(verdicts, position):
                verdict["bundle"], verdict["host"] = bundles[offset], host
            on_verdicts(position, verdicts)

    verdicts = _runner(config).run(list(bundles), tell)
    for bundle, verdict in zip(bundles, verdicts, strict=True):
        verdict["bundle"] = bundle
        verdict["host"] = host
    return verdicts


def check_bundle(bundle: str, config: dict[str, Any]) -> dict[str, Any]:
    """:func:`check_batch` of one bundle: its verdict dict."""
    return check_batch([bundle], config)[0]
