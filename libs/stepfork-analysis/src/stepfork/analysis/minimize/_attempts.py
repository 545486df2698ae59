"""Where ``minimize`` runs a replay attempt: a child forked by the zygote (:mod:`._zygote`) where the platform
can fork, else a fresh ``python -m stepfork.analysis._minimize_worker`` per attempt (the fallback, also taken
when the zygote cannot start, refuses to fork, or breaks). Both give the same :class:`Signature` for the
same candidate, so the minimized bundle, the replay count and 1-minimality do not depend on the path.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any

from stepfork.analysis._lines import line_of, parse_line
from stepfork.analysis._signature import Signature
from stepfork.analysis._zygote import died

# Tests and the benchmark set this to force the subprocess path; it is not a user setting.
FORCE_SUBPROCESS_ENV = "_STEPFORK_MINIMIZE_SUBPROCESS"
_GRACE = 60.0  # seconds past an attempt's timeout before the zygote itself counts as stuck
_STOP_WAIT = 5.0  # seconds the zygote gets to kill and reap its children when closed
# the name of the thread that reaps a check zygote after close() returned (_ZygoteClient.close)
REAPER_THREAD = "stepfork-zygote-reaper"


def _bounded(seconds: float) -> float | None:
    """``seconds`` as a wait for threading (None, no limit, beyond what a lock's timeout accepts)."""
    return None if seconds >= threading.TIMEOUT_MAX else seconds


def _ended_within(proc: subprocess.Popen[bytes], timeout: float) -> bool:
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


class AttemptsClosed(RuntimeError):
    """An attempt was asked for, or was running, when the runner was closed (minimize was interrupted)."""


class _ZygoteBroken(Exception):
    """The zygote went away or stopped answering; the attempt runs in a subprocess instead."""


def replay_in_subprocess(bundle: Path, config: dict[str, Any]) -> Signature:
    """Replay ``bundle`` in a fresh ``python -m stepfork.analysis._minimize_worker`` and return its signature.

    Args:
        bundle: the candidate bundle; config: ``entrypoint``, ``mode``, ``import_root`` (also the working
            directory), ``expected``, ``has_expected``, ``timeout`` (seconds, the whole process).

    Returns:
        the worker's signature; ``Signature("timeout")`` when it ran out of time (it is killed);
        ``Signature("crash", <last stderr line, 200 chars>)`` when it printed none, and
        ``Signature("crash", "malformed signature line")`` when its line does not parse.
    """
    payload = json.dumps({**config, "bundle": str(bundle)})
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "stepfork.analysis._minimize_worker"],
            input=payload,
            capture_output=True,
            text=True,
            timeout=config["timeout"],
            check=False,
            cwd=config["import_root"],
        )
    except subprocess.TimeoutExpired:
        return Signature("timeout")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("STEPFORK-SIGNATURE ")]
    if not lines:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return Signature("crash", died(last, proc.returncode))
    try:
        return Signature.from_json(json.loads(lines[-1].removeprefix("STEPFORK-SIGNATURE ")))
    except ValueError:  # a line the agent printed to look like ours (JSONDecodeError is a ValueError)
        return Signature("crash", "malformed signature line")


class _ZygoteClient:
    """The minimizer's end of one zygote: sends jobs, and a reader thread routes answers to their futures."""

    def __init__(
        self,
        config: dict[str, Any],
        decode: Callable[[dict[str, Any]], Any] = Signature.from_json,
        *,
        reap_in_background: bool = False,
    ) -> None:
        self._decode = decode  # an answer line to what run() returns (check: the verdict dict itself)
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
            [sys.executable, "-m", "stepfork.analysis._zygote"],
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
            future.set_exception(_ZygoteBroken())

    def wait_ready(self, timeout: float) -> bool:
        """True when the zygote has imported everything and may fork; False if it refused, died or took
        longer than ``timeout`` seconds (one attempt's budget: a subprocess would not have done better)."""
        try:
            return self._ready.result(timeout=_bounded(timeout))
        except TimeoutError:
            return False

    def run(
        self,
        bundle: Path | str | list[str],
        wait: float,
        on_part: Callable[[list[Any]], None] | None = None,
    ) -> Any:
        """Replay ``bundle`` in a forked child (a list: a ``check`` batch, :mod:`._check_batch`) and return
        its decoded answer (a :class:`Signature` by default); raise :class:`_ZygoteBroken` when no answer
        can come within ``wait`` seconds. ``on_part``: called, in the reader thread, with each list of a
        batch's verdicts the zygote sends ahead of the whole answer (a ``check`` configuration with
        ``"progress": true``); the answer still holds every verdict."""
        future: Future[Any] = Future()
        with self._lock:
            if self._broken:
                raise _ZygoteBroken()
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
                raise _ZygoteBroken() from None
        try:
            return future.result(timeout=_bounded(wait))
        except TimeoutError:
            self.close()  # the zygote enforces the timeout itself; no answer means it is stuck
            raise _ZygoteBroken() from None

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
            if _ended_within(self._proc, _STOP_WAIT):
                self._proc.wait()
                break
        self._reader.join()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._fail()


class AttemptRunner:
    """Runs the replay attempts of one ``minimize`` call; use it as a context manager (closing it stops the
    zygote and every attempt still running).

    Args:
        entrypoint, mode, import_root, expected, has_expected, ordering, network, allow_hosts: as
            ``replay_signature`` takes them.
        timeout: seconds per attempt; an attempt running longer is killed and gives ``Signature("timeout")``.
    """

    def __init__(
        self,
        *,
        entrypoint: str,
        mode: str,
        import_root: str,
        expected: Any,
        has_expected: bool,
        timeout: float,
        ordering: str = "auto",
        network: str | None = None,
        allow_hosts: list[str] | None = None,
    ) -> None:
        self.config: dict[str, Any] = {
            "ordering": ordering,
            "network": network,
            "allow_hosts": list(allow_hosts or []),
            "entrypoint": entrypoint,
            "mode": mode,
            "import_root": import_root,
            "expected": expected,
            "has_expected": has_expected,
            "timeout": timeout,
        }
        self._zygote: _ZygoteClient | None = None
        self._ready: bool | None = None
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> AttemptRunner:
        forkable = hasattr(os, "fork") and sys.platform.startswith(("linux", "darwin"))
        if forkable and not os.environ.get(FORCE_SUBPROCESS_ENV):
            try:
                self._zygote = _ZygoteClient(self.config)
            except OSError:
                self._zygote = None
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _usable_zygote(self) -> _ZygoteClient | None:
        with self._lock:
            if self._zygote is not None and self._ready is None:
                self._ready = self._zygote.wait_ready(self.config["timeout"])
                if not self._ready:
                    self._zygote.close()
            return self._zygote if self._ready else None

    def run(self, bundle: Path) -> Signature:
        """Replay the candidate ``bundle`` once and return its :class:`Signature`.

        Raises:
            AttemptsClosed: the runner was closed before or during the attempt.
        """
        if self._closed:
            raise AttemptsClosed("minimize was interrupted")
        zygote = self._usable_zygote()
        if zygote is not None:
            try:
                signature: Signature = zygote.run(bundle, self.config["timeout"] + _GRACE)
                return signature
            except _ZygoteBroken:
                if self._closed:
                    raise AttemptsClosed("minimize was interrupted") from None
        return replay_in_subprocess(bundle, self.config)

    def close(self) -> None:
        """Stop the zygote, killing the attempts it runs; later :meth:`run` calls raise. Idempotent."""
        self._closed = True
        if self._zygote is not None:
            self._zygote.close()
