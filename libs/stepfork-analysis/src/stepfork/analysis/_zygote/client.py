"""The client's end of a zygote (:mod:`stepfork.analysis._zygote.server`): starts it, sends jobs, routes
the answers to the callers waiting for them. ``minimize`` (:mod:`stepfork.analysis.minimize._attempts`) and
``check`` (:mod:`stepfork.analysis.check._runner`) each start the zygote of their own task and fall back to
a fresh subprocess per job when it cannot start, refuses to fork, or breaks (:class:`ZygoteBroken`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from stepfork.analysis._zygote.lines import line_of, parse_line

# Tests and the benchmarks set this to force the subprocess path (minimize and check); not a user setting.
FORCE_SUBPROCESS_ENV = "_STEPFORK_MINIMIZE_SUBPROCESS"
GRACE = 60.0  # seconds past an attempt's timeout before the zygote itself counts as stuck
_STOP_WAIT = 5.0  # seconds the zygote gets to kill and reap its children when closed
# the name of the thread that reaps a check zygote after close() returned (ZygoteClient.close)
REAPER_THREAD = "stepfork-zygote-reaper"


def bounded(seconds: float) -> float | None:
    """``seconds`` as a wait for threading (None, no limit, beyond what a lock's timeout accepts)."""
    return None if seconds >= threading.TIMEOUT_MAX else seconds


def ended_within(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether ``proc`` ended within ``timeout`` seconds. Where Linux gives a process descriptor, it is
    waited for without being reaped (no sleeping poll): its process group then stays its own until it is
    killed (no other process can take that number meanwhile)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        with contextlib.suppress(OSError):  # no pidfd (an old kernel): wait as Popen does
            descriptor = pidfd_open(proc.pid)
            try:
                return bool(select.select([descriptor], [], [], timeout)[0])
            finally:
                os.close(descriptor)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


class ZygoteBroken(Exception):
    """The zygote went away or stopped answering; the attempt runs in a subprocess instead."""


class ZygoteClient:
    """The client's end of one zygote: sends jobs, and a reader thread routes answers to their futures.

    Args:
        module: the zygote's module, run as ``python -m MODULE`` (it calls :func:`.server.serve` with its
            task): ``stepfork.analysis.minimize._zygote`` or ``stepfork.analysis.check._zygote``.
        config: the configuration line (``import_root`` is also the zygote's working directory).
        decode: an answer line to what :meth:`run` returns (``minimize``: a ``Signature``; ``check``: the
            verdict dict itself).
        reap_in_background: see :meth:`close`.
    """

    def __init__(
        self,
        module: str,
        config: dict[str, Any],
        decode: Callable[[dict[str, Any]], Any],
        *,
        reap_in_background: bool = False,
    ) -> None:
        self._decode = decode
        # check: close() returns once the zygote has stopped answering (its children killed), and a thread
        # reaps it; minimize: close() returns when the zygote and every attempt's process are gone
        self._reap_in_background = reap_in_background
        self._lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._ready: Future[bool] = Future()
        self._ids = itertools.count()
        self._broken = False
        self.refusal: dict[str, Any] = {}  # the zygote's {"ready": false, ...} line, when it refused
        # check batches with progress: the verdicts of a job received ahead of its answer, and who hears them
        self._parts: dict[int, list[Any]] = {}
        self._on_part: dict[int, Callable[[list[Any]], None]] = {}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=config["import_root"],
            start_new_session=True,  # a terminal's Ctrl-C reaches the minimizer, which stops the zygote
        )
        self._reader = threading.Thread(target=self._read, name="stepfork-zygote-reader", daemon=True)
        self._reader.start()
        with contextlib.suppress(OSError):  # it died at once: the reader sees EOF, readiness becomes False
            self._write(config)

    def _write(self, message: dict[str, Any]) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        stdin.write(line_of(message))
        stdin.flush()

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            for raw in stdout:
                message = parse_line(raw)
                if "ready" in message:
                    if not message["ready"]:
                        self.refusal = message
                    self._ready.set_result(bool(message["ready"]))
                    continue
                job = int(message["id"])
                if message.get("kind") == "part":  # a check batch's verdicts so far (config "progress")
                    with self._lock:
                        self._parts.setdefault(job, []).extend(message["verdicts"])
                        listener = self._on_part.get(job)
                    if listener is not None:
                        listener(message["verdicts"])
                    continue
                with self._lock:
                    future = self._pending.pop(job, None)
                    parts = self._parts.pop(job, None)
                    self._on_part.pop(job, None)
                if parts:  # the batch's answer holds only the verdicts not sent ahead
                    message["verdicts"] = parts + list(message["verdicts"])
                if future is not None:
                    future.set_result(self._decode(message))
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a closed or garbled pipe: the zygote is broken, handled below
        finally:
            self._fail()

    def _fail(self) -> None:
        with self._lock:
            self._broken = True
            pending, self._pending = list(self._pending.values()), {}
            self._on_part.clear()
        if not self._ready.done():
            self._ready.set_result(False)
        for future in pending:
            future.set_exception(ZygoteBroken())

    def wait_ready(self, timeout: float) -> bool:
        """True when the zygote has imported everything and may fork; False if it refused, died or took
        longer than ``timeout`` seconds (one attempt's budget: a subprocess would not have done better)."""
        try:
            return self._ready.result(timeout=bounded(timeout))
        except TimeoutError:
            return False

    def run(
        self,
        bundle: Path | str | list[str],
        wait: float,
        on_part: Callable[[list[Any]], None] | None = None,
    ) -> Any:
        """Replay ``bundle`` in a forked child (a list: a ``check`` batch,
        :mod:`stepfork.analysis.check._batch`) and return its decoded answer (``decode``); raise
        :class:`ZygoteBroken` when no answer can come within ``wait`` seconds. ``on_part``: called, in the
        reader thread, with each list of a batch's verdicts the zygote sends ahead of the whole answer (a
        ``check`` configuration with ``"progress": true``); the answer still holds every verdict."""
        future: Future[Any] = Future()
        with self._lock:
            if self._broken:
                raise ZygoteBroken()
            job = next(self._ids)
            self._pending[job] = future
            if on_part is not None:
                self._on_part[job] = on_part
            try:
                if isinstance(bundle, list):
                    self._write({"id": job, "bundles": bundle})
                else:
                    self._write({"id": job, "bundle": str(bundle)})
            except OSError:
                del self._pending[job]
                self._on_part.pop(job, None)
                raise ZygoteBroken() from None
        try:
            return future.result(timeout=bounded(wait))
        except TimeoutError:
            self.close()  # the zygote enforces the timeout itself; no answer means it is stuck
            raise ZygoteBroken() from None

    def close(self) -> None:
        """Stop the zygote (it kills and reaps its children first) and reap it; idempotent.

        With ``reap_in_background`` and every job answered (so no child is replaying: the end of every
        check that was not interrupted), returns at once: a daemon thread waits for the zygote to kill its
        idle children, close its output and exit, and reaps it (3-6 ms at the end of every check, which
        waited for the zygote's output to end). With a job still unanswered (an interrupted check), returns
        once the zygote has closed its output, which it does after killing its children; a daemon thread
        then reaps it."""
        with self._lock:
            self._broken = True
            idle = not self._pending
            if self._proc.stdin is not None:
                with contextlib.suppress(OSError):  # end of input is the zygote's shutdown signal
                    self._proc.stdin.close()
        stops: tuple[Callable[[], None] | None, ...] = (None, self._proc.terminate, self._proc.kill)
        if self._reap_in_background and idle:
            threading.Thread(target=self._end, args=(stops,), name=REAPER_THREAD, daemon=True).start()
            return
        if self._reap_in_background:
            self._reader.join(_STOP_WAIT)  # the end of the zygote's output
            if not self._reader.is_alive():
                if self._proc.poll() is None:
                    threading.Thread(target=self._proc.wait, name=REAPER_THREAD, daemon=True).start()
                if self._proc.stdout is not None:
                    self._proc.stdout.close()
                self._fail()
                return
            stops = stops[1:]  # it had its time to stop: no second wait before the signals
        self._end(stops)

    def _end(self, stops: tuple[Callable[[], None] | None, ...]) -> None:
        """Wait up to :data:`_STOP_WAIT` for the zygote's exit after each of ``stops`` (None: no signal),
        reap it, and close its output."""
        for stop in stops:
            if stop is not None:
                stop()
            # a process descriptor wakes this at the zygote's exit; Popen.wait(timeout) polls with sleeps
            # of growing length and overslept it by several ms at the end of every check
            if ended_within(self._proc, _STOP_WAIT):
                self._proc.wait()
                break
        self._reader.join()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._fail()
