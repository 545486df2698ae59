"""The zygote of ``minimize`` and ``check``: one long-lived process that imports stepfork and the user's
entrypoint once and then ``os.fork()``s a fresh child per replay attempt (``check``: per batch of bundles,
:mod:`stepfork.analysis.check._batch`, which decides when a batch needs a fresh child).

This module is the process, the protocol and the fork per job; what a job is belongs to its task
(:class:`Task`): the process is started as ``python -m stepfork.analysis.minimize._zygote`` or ``python -m
stepfork.analysis.check._zygote``, whose modules hand :func:`serve` their task. Nothing here imports
``minimize`` or ``check``.

Starting Python and importing stepfork, pydantic and the agent costs about 0.3 s per attempt; a fork costs
a few milliseconds. Isolation is kept: every attempt runs in its own process, a copy of the zygote taken
before any attempt ran, so module state an agent mutates, a hang or a crash never reaches the next attempt,
the zygote or the minimizer. The model is multiprocessing's forkserver (a server that preloads modules and
forks per request); that module is not used itself because its server is one per interpreter, keeps one
preload list and lives until the interpreter exits, while each ``minimize`` needs its own entrypoint and
import root and must leave no process behind. The client is :mod:`stepfork.analysis._zygote.client`.

Only the entrypoint the user named is imported here; the bundle is read by the children, as data. No thread
is started in this process (forking a threaded process can copy a held lock): when importing the entrypoint
started one, the zygote answers ``ready: false`` and the client falls back to a subprocess per attempt.

Protocol: JSON lines on the zygote's original stdin/stdout, moved to private descriptors at start so that
nothing the agent prints can reach them (fd 1 becomes fd 2, fd 0 ``/dev/null``)::

    in   {"entrypoint", "mode", "import_root", "expected", "has_expected", "timeout"}  first line
    out  {"ready": true} | {"ready": false, "reason": "..."}                           once
         (check, an entrypoint or raise_as class that cannot be resolved: also "verdict", every bundle's,
         and the zygote exits)
    in   {"id": N, "bundle": PATH}                                                      per attempt
    out  {"id": N, "kind": "...", "detail": ..., ...}  (Signature.to_json() + id)     each, any order

In ``check``'s zygote (``stepfork check``), a job is a batch, ``{"id": N, "bundles": [PATH, ...]}``,
replayed by one child after another (:mod:`stepfork.analysis.check._batch`): each child replays bundles in
turn and writes one verdict line per bundle (:func:`stepfork.analysis.check._worker.verdict_of`), exiting
early when a replay left state behind (once it said so, the zygote kills its process group rather than
wait for its pipe's end); the timeout is per bundle; a child that dies or runs out of time
costs only its current bundle a ``crash`` / ``timeout`` answer, and the rest of the batch goes on in a fresh
child. The answer is ``{"id": N, "kind": "batch", "verdicts": [...]}``, one per bundle, in order; with
``"progress": true`` in the first line, a running batch's new verdicts go ahead as ``{"id": N, "kind":
"part", "verdicts": [...]}`` (once per round of the loop) and the answer holds only the rest. With
``"workers": K`` in the first line, at most K children run at once: further batches wait in the zygote and
go to the first worker that finishes its batch, without a round trip to the client. That scheduling is
:class:`stepfork.analysis.check._zygote_batches.BatchZygote`'s; this module is the process, the protocol and
the fork per attempt of ``minimize``.

End of input (or SIGTERM) shuts the zygote down after killing and reaping every running child.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import selectors
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn

from stepfork.analysis._zygote.lines import line_of, parse_line

_STDERR_TAIL = 65536  # bytes read back from a child's stderr to find its last line
_MAX_WAIT = 3600.0  # seconds per poll() at most: poll takes a C int of milliseconds; the loop waits again


@dataclass
class Child:
    """One running attempt: its pid, the read end of its result pipe, its stderr file and deadline."""

    job: int | None  # None: a check worker between batches (idle, or exiting after its last answer)
    pid: int
    result_fd: int
    stderr: IO[bytes]
    deadline: float
    bundles: list[str] = field(default_factory=list)  # what this child replays, in order
    output: bytearray = field(default_factory=bytearray)
    answered: int = 0  # check batches: answer lines received from this child
    restart: bool = False  # check batches: the last answer said the child exits for a fresh one
    stderr_at: int = 0  # check batches: where the current bundle's stderr starts
    since: float = 0.0  # check batches: when the current bundle started (monotonic)
    batch_start: float = 0.0  # check batches: when the current batch started (monotonic)
    jobs_fd: int = -1  # check batches: where the zygote writes this worker's next batch
    ahead: tuple[int, list[str]] | None = None  # check batches: (job, bundles) written before this one ends
    pace: float = 0.0  # check batches: seconds per bundle over this worker's last whole batch (0: none yet)
    status: int | None = None  # its wait status, once reaped


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to the file descriptor ``fd`` (``os.write`` may write part of it to a
    pipe); raises OSError as ``os.write`` does (a closed pipe: BrokenPipeError)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def kill(pid: int) -> None:
    """SIGKILL the child's process group (the agent's own subprocesses too), else the child alone."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):  # already gone; waitpid still reaps it
            os.kill(pid, signal.SIGKILL)


def _reap(pid: int) -> int | None:
    """Kill ``pid`` (see :func:`kill`) and wait for it, so that no zombie is left; return its wait status
    (a child that had already ended keeps its own: a kill does not change a zombie's), None if unknown."""
    kill(pid)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None


def died(detail: str, code: int | None) -> str:
    """A crash's one line: the last line the process wrote to stderr, or, when it wrote none, how it ended
    from its exit ``code`` (``subprocess``'s convention: negative for a signal): ``no output (exit status
    3)``, ``no output (killed by signal SIGSEGV)``. The zygote's children and the subprocess fallbacks of
    ``check`` and ``minimize`` describe a crash alike."""
    if detail != "no output" or code is None:
        return detail
    if code >= 0:
        return f"no output (exit status {code})"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = str(-code)
    return f"no output (killed by signal {name})"


def death(detail: str, status: int | None) -> str:
    """:func:`died`'s line for a child whose raw wait status (``os.waitpid``'s) is ``status``, converted to
    an exit code (negative: the signal), or None when it was never reaped."""
    return died(detail, None if status is None else os.waitstatus_to_exitcode(status))


def last_stderr_line(stream: IO[bytes], since: int = 0) -> str:
    """The last non-blank line of a child's stderr written at or after offset ``since`` (a batch child's
    current bundle; its first 200 characters; ``no output`` when there is none), as the subprocess path
    reports it; reads only as much of the end of the file as that needs."""
    size = stream.seek(0, os.SEEK_END)
    tail = _STDERR_TAIL
    while True:
        start = max(since, size - tail)
        stream.seek(start)
        lines = stream.read().decode("utf-8", "replace").strip().splitlines()
        if start == since or len(lines) > 1:  # the last line is whole: a line break precedes it
            return (lines or ["no output"])[-1][:200]
        tail *= 4


def join_threads() -> None:
    """As interpreter shutdown would: wait for the non-daemon threads the replay left running."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()


Work = Callable[[dict[str, Any], list[str], int, int], None]
"""A forked child's job: ``work(config, bundles, result_fd, jobs_fd)`` replays ``bundles`` and writes its
answer lines to ``result_fd`` (:func:`write_all`); ``jobs_fd`` is where a ``check`` worker reads its further
batches (-1 for a ``minimize`` attempt). See :class:`Task`."""


def _run_attempt(
    work: Work,
    config: dict[str, Any],
    bundles: list[str],
    result_fd: int,
    stderr_fd: int,
    owned: list[int],
    jobs_fd: int = -1,
) -> NoReturn:
    """The child's whole life: isolate, run ``work`` on ``bundles`` (one for ``minimize``; a batch for
    ``check``, then each further batch read from ``jobs_fd``), ``os._exit``.

    Never returns into the zygote's loop: every path ends in ``os._exit`` (no atexit handlers, no flushing
    of buffers copied from the zygote), as the forked children of multiprocessing do.
    """
    code = 1
    try:
        with contextlib.suppress(OSError):  # own process group: a kill reaches the agent's subprocesses
            os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for fd in owned:  # the protocol and other attempts' descriptors are the zygote's alone
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # agent prints go nowhere, as the worker's unread stdout did
        os.dup2(stderr_fd, 2)
        os.close(devnull)
        work(config, bundles, result_fd, jobs_fd)
        code = 0
    except SystemExit as exc:  # what the interpreter prints for an uncaught SystemExit
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:
        sys.excepthook(*sys.exc_info())  # the traceback's last line is the crash detail, as in a subprocess
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):  # a broken stream must not stop the exit
                stream.flush()
        os._exit(code)


class Threaded(Exception):
    """Preloading a module started a thread: the zygote stops (its client falls back to subprocesses)."""


class Zygote:
    """The zygote's loop for ``minimize``: reads jobs, forks a child per attempt (``work``, the task's),
    enforces deadlines, reports signatures. ``check``'s batches run in a subclass
    (:class:`stepfork.analysis.check._zygote_batches.BatchZygote`) through the hooks :meth:`gathers`,
    :meth:`expire` and :meth:`settle`."""

    batch = False  # True for ``check``: a job is a batch of bundles and its children read further batches

    def __init__(self, config: dict[str, Any], proto_in: int, proto_out: int, work: Work) -> None:
        self.config = config
        self.work = work
        self.timeout = float(config["timeout"])
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.children: dict[int, Child] = {}  # result_fd -> child
        self.selector = selectors.PollSelector()  # no descriptor of its own for children to inherit

    def send(self, message: dict[str, Any]) -> None:
        """Write one protocol line to the client."""
        write_all(self.proto_out, line_of(message))

    def dispatch(self, job: int, bundles: list[str]) -> None:
        """Start ``bundles`` (one attempt's bundle) in a child forked now."""
        self.spawn(job, bundles)

    def spawn(self, job: int, bundles: list[str]) -> None:
        """Fork a child replaying ``bundles`` (one, or a ``check`` batch); register its result pipe and
        deadline."""
        read_fd, write_fd = os.pipe()
        jobs_read, jobs_write = os.pipe() if self.batch else (-1, -1)
        # A file, not a pipe: a chatty agent never blocks on it. Closed in finish().
        stderr = tempfile.TemporaryFile()  # noqa: SIM115
        owned = [self.proto_in, self.proto_out, read_fd]
        if jobs_write >= 0:
            owned.append(jobs_write)
        for child in self.children.values():
            owned += [child.result_fd, child.stderr.fileno()]
            if child.jobs_fd >= 0:  # else an idle worker would never see its batches end
                owned.append(child.jobs_fd)
        sys.stdout.flush()
        sys.stderr.flush()  # nothing buffered here may be written again by the child
        pid = os.fork()
        if pid == 0:
            _run_attempt(self.work, self.config, bundles, write_fd, stderr.fileno(), owned, jobs_read)
        with contextlib.suppress(OSError):  # also here: the group exists before any kill, whoever runs first
            os.setpgid(pid, pid)
        os.close(write_fd)
        if jobs_read >= 0:
            os.close(jobs_read)
        now = time.monotonic()
        child = Child(job, pid, read_fd, stderr, now + self.timeout, bundles, jobs_fd=jobs_write)
        child.since = child.batch_start = now
        self.children[read_fd] = child
        self.selector.register(read_fd, selectors.EVENT_READ, child)

    def received(self, child: Child, data: bytes) -> None:
        """Take what ``child`` wrote (a signature, read whole when the child ends)."""
        child.output += data

    def release(self, child: Child) -> None:
        """Kill (a no-op when it exited) and reap ``child``; close its pipes."""
        self.selector.unregister(child.result_fd)
        del self.children[child.result_fd]
        child.status = _reap(child.pid)
        os.close(child.result_fd)
        if child.jobs_fd >= 0:
            os.close(child.jobs_fd)

    def finish(self, child: Child, *, timed_out: bool) -> None:
        """Release ``child`` (:meth:`release`), then report its signature."""
        self.release(child)
        message: dict[str, Any] = {"kind": "timeout", "detail": None}
        if not timed_out:
            try:
                data = json.loads(bytes(child.output))
                if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
                    raise TypeError("not a signature")
                message = data  # every field of Signature.to_json(), passed on unchanged
            except (ValueError, TypeError):  # no signature: the child died first
                message = {"kind": "crash", "detail": death(last_stderr_line(child.stderr), child.status)}
        message["id"] = child.job
        child.stderr.close()
        self.send(message)

    def gathers(self, child: Child) -> bool:
        """Whether to let more output gather after reading ``child``'s (``check``); no for an attempt."""
        return False

    def expire(self, child: Child, now: float) -> None:
        """``child`` is past its deadline at ``now``: it is killed and answered ``timeout``."""
        self.finish(child, timed_out=True)

    def settle(self, now: float, gather: bool) -> None:
        """The end of a round of the loop (``check`` starts queued batches and gathers output here)."""

    def idle_at_end(self) -> bool:
        """Whether, when the client stops this zygote, it may be told so before the killed children are
        reaped: never for ``minimize``, whose client waits for every attempt's process to be gone."""
        return False

    def serve(self, pending: bytes = b"") -> None:
        """Run jobs (``pending``: input already read) until end of input; always kill and reap the children
        left."""
        self.selector.register(self.proto_in, selectors.EVENT_READ, None)
        try:
            self._serve(pending)
        except Threaded:  # children reaped; the thread an import started must not keep the zygote alive
            os._exit(0)

    def _serve(self, pending: bytes) -> None:
        try:
            while True:
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    job = parse_line(line)
                    bundles = job["bundles"] if "bundles" in job else [job["bundle"]]
                    self.dispatch(int(job["id"]), [str(b) for b in bundles])
                deadlines = [c.deadline for c in self.children.values()]
                wait = min(_MAX_WAIT, max(0.0, min(deadlines) - time.monotonic())) if deadlines else None
                gather = False
                for key, _ in self.selector.select(wait):
                    child = key.data
                    if child is None:
                        data = os.read(self.proto_in, 65536)
                        if not data:
                            return
                        pending += data
                        continue
                    data = os.read(child.result_fd, 65536)
                    if data:
                        self.received(child, data)
                        gather = self.gathers(child)
                    else:
                        self.finish(child, timed_out=False)
                now = time.monotonic()
                for child in [c for c in self.children.values() if c.deadline <= now]:
                    self.expire(child, now)
                self.settle(now, gather)
        finally:
            for child in self.children.values():  # every kill first: their exits then run side by side
                kill(child.pid)
            if self.idle_at_end():
                # nothing was replaying: the client may go on now. Closing the protocol is its signal;
                # reaping the killed workers (their address spaces torn down) and this process's own exit
                # take a few ms more, which the client does not wait for (client.ZygoteClient.close)
                os.close(self.proto_out)
            for child in self.children.values():
                _reap(child.pid)


def _read_line(fd: int) -> tuple[bytes, bytes]:
    """Read up to the first newline of ``fd``; return ``(line, what was read after it)``.

    Raises:
        EOFError: the input ended first (the client went away).
    """
    data = b""
    while b"\n" not in data:
        chunk = os.read(fd, 65536)
        if not chunk:
            raise EOFError("the client closed the zygote's input")
        data += chunk
    line, _, rest = data.partition(b"\n")
    return line, rest


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(1)  # unwinds through serve()'s finally, which kills the children


@dataclass(frozen=True)
class Task:
    """What one kind of job asks of the zygote: ``minimize``'s attempts or ``check``'s batches.

    Attributes:
        zygote: the loop's class: :class:`Zygote` (a child per job) or a subclass (``check``'s batches,
            :class:`stepfork.analysis.check._zygote_batches.BatchZygote`).
        prepare: called once with the configuration (the first input line), after this process's own
            descriptors are set aside and before readiness is reported: imports what every child needs and
            the entrypoint. Returns None when the zygote may fork, else the ``{"ready": false, ...}`` line
            to answer (the zygote then exits).
        work: each forked child's job (:data:`Work`).
    """

    zygote: type[Zygote]
    prepare: Callable[[dict[str, Any]], dict[str, Any] | None]
    work: Work


def serve(task: Task) -> None:
    """Be the zygote of ``task``: read the configuration line, prepare (``task.prepare``), report readiness
    and serve jobs until end of input (or SIGTERM), then exit the process. Returns only when ``prepare``
    refused or the zygote could not start (the caller's interpreter then exits as usual)."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # an import-time print of the agent goes to stderr, never into the protocol
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the client decides when the zygote stops
    signal.signal(signal.SIGTERM, _terminate)
    line, rest = _read_line(proto_in)
    config = json.loads(line)
    zygote = task.zygote(config, proto_in, proto_out, task.work)
    refusal = task.prepare(config)
    if refusal is not None:
        zygote.send(refusal)
        return
    if threading.active_count() > 1:
        started = threading.active_count() - 1
        zygote.send({"ready": False, "reason": f"importing the entrypoint started {started} thread(s)"})
        return
    gc.collect()
    gc.freeze()  # keep preloaded objects out of the children's collections: fewer copied pages
    zygote.send({"ready": True})
    zygote.serve(rest)
    # Every child is reaped and every answer written (os.write): the interpreter's teardown of the SDK's
    # modules and objects would only delay the client waiting for this exit (about 10 ms)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)
