"""``check``'s side of the zygote (:mod:`stepfork.analysis._zygote.server`; this task's :mod:`._zygote`):
batches of bundles replayed by long-lived workers.

A job is a batch, ``{"id": N, "bundles": [PATH, ...]}``. A worker (a child forked from the zygote,
:mod:`._batch`) replays its bundles one after another and writes one verdict line per bundle; when its
batch ends with the agent's state as the zygote had it, it reads the next batch from its own jobs pipe.
A crash or a timeout costs only the bundle being replayed (the rest of the batch goes to a fresh worker);
the timeout is per bundle. With ``"workers": K`` in the configuration (``check_corpus``'s local pool), at
most K workers run at once and further batches wait in :attr:`BatchZygote.queue`, except one per running
worker, written to its jobs pipe while it still replays (``Child.ahead``): a worker that ends a batch
goes on with the next at once, without waiting for this loop to read its last verdict (which it does in
gathers, :data:`_GATHER`) or for the client (docs/check.md "Isolation and speed"; docs/decisions.md). A
worker that exits instead (a crash, a timeout, a replay that changed the agent's state) never read that
batch: it goes back to the head of the queue.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import select
import sys
import threading
import time
from collections import deque
from typing import Any

from stepfork.analysis._zygote.lines import line_of, parse_line
from stepfork.analysis._zygote.server import (
    Child,
    Threaded,
    Work,
    Zygote,
    death,
    kill,
    last_stderr_line,
    write_all,
)
from stepfork.analysis.check._batch import prepare

__all__ = ["BatchZygote"]

# After reading verdict lines, let more gather before the next read. A wake-up per verdict cost the zygote
# ~0.06 ms of CPU per bundle, taken from the workers on a busy machine (8% of a 0.5 ms replay); the workers
# stamp each verdict with their own time, so durations and per-bundle deadlines stay exact. The client's jobs
# still wake it at once, and it wakes by the time a batch's last verdict is due (_gather_for)
_GATHER = 0.01
_DRAIN_READS = 16  # reads of 64 KiB at most from a child past its deadline before it is judged (drain)
# A batch is handed ahead only when its line fits the jobs pipe's buffer (64 KiB on Linux) with room to
# spare: the worker reads it only when its current batch ends, and this loop must never block on the write
_AHEAD_MAX = 16384


class BatchZygote(Zygote):
    """The zygote's loop for ``check``: batches, long-lived workers, the worker cap and its queue."""

    batch = True

    def __init__(self, config: dict[str, Any], proto_in: int, proto_out: int, work: Work) -> None:
        super().__init__(config, proto_in, proto_out, work)
        self.batches: dict[int, list[dict[str, Any]]] = {}  # job id -> the answers so far
        self.to_warm: set[str] = set()  # modules replays imported lazily, preloaded before a fork
        self.idle: list[Child] = []  # workers waiting for a batch (their state is the zygote's)
        workers = config.get("workers")
        self.cap: int | None = workers if isinstance(workers, int) and workers > 0 else None
        self.queue: deque[tuple[int, list[str]]] = deque()  # batches waiting for a worker (cap)
        # "progress": send each batch's verdicts as they come (a progress bar), once per round of the loop
        self.progress = bool(config.get("progress"))
        self.sent: dict[int, int] = {}  # job id -> its answers already sent ahead ("part" lines)

    def dispatch(self, job: int, bundles: list[str]) -> None:
        """Start the batch ``bundles``: on an idle worker when there is one (it
        replays them in the state the zygote left it in, :func:`._batch.serve_batches`), else in a
        child forked now; with a worker cap reached, the batch waits in :attr:`queue` (:meth:`pump` hands
        it ahead to a running worker, or starts it when a worker is free)."""
        if not self.idle:
            if self.cap is not None and len(self.children) >= self.cap:
                self.queue.append((job, bundles))
                return
            self.spawn(job, bundles)
            return
        self.assign(self.idle.pop(), job, bundles)

    def hand_ahead(self, job: int, bundles: list[str]) -> bool:
        """Write the batch to a running worker that holds none ahead yet (it reads it when its current batch
        ends; :meth:`complete` then makes it current). False when no worker can take it (none running
        without one, the line too long for the pipe, or the write failed: the worker died)."""
        line = line_of(bundles)
        if len(line) > _AHEAD_MAX:
            return False
        for child in self.children.values():
            if child.job is None or child.ahead is not None or child.restart or child.jobs_fd < 0:
                continue
            try:
                write_all(child.jobs_fd, line)
            except OSError:  # it died: its end of file is read later, and another worker may take it
                continue
            child.ahead = (job, bundles)
            return True
        return False

    def requeue(self, child: Child) -> None:
        """``child`` exits without reading the batch handed ahead to it: that batch goes first in line."""
        if child.ahead is not None:
            self.queue.appendleft(child.ahead)
            child.ahead = None

    def assign(self, child: Child, job: int, bundles: list[str]) -> None:
        """Hand a batch to ``child``, a worker between batches (its last answer did not say ``restart``)."""
        now = time.monotonic()
        child.job, child.bundles, child.answered = job, bundles, 0
        child.since = child.batch_start = now
        child.deadline = now + self.timeout
        try:
            write_all(child.jobs_fd, line_of(bundles))
        except OSError:  # it died while idle: its end of file is read later; this batch goes to a fresh fork
            child.job, child.bundles, child.deadline = None, [], math.inf
            self.spawn(job, bundles)

    def received(self, child: Child, data: bytes) -> None:
        """Take what ``child`` wrote; its answer lines are taken one by one: each restarts the deadline for
        the next bundle (the timeout is per bundle)."""
        super().received(child, data)
        if b"\n" not in data:
            return
        *lines, rest = bytes(child.output).split(b"\n")
        child.output = bytearray(rest)
        for line in lines:
            answer = parse_line(line)  # the pipe is the child's own (the agent's fds 1 and 2 are elsewhere)
            if answer.get("worker") != child.pid:  # written by a process the agent forked: not an answer
                continue
            now = time.monotonic()
            done = answer.pop("done_at", None)  # when the child had it (one monotonic clock for the machine)
            if isinstance(done, float) and child.since <= done < now:
                now = done
            answer["duration_ms"] = round((now - child.since) * 1000, 3)
            child.restart = bool(answer.pop("restart", False))
            child.stderr_at = int(answer.pop("stderr_at", child.stderr_at))
            self.to_warm.update(m for m in answer.pop("modules", None) or () if isinstance(m, str))
            if child.job is None:  # nothing was asked of it: a confused child is not trusted further
                kill(child.pid)
                continue
            self.batches.setdefault(child.job, []).append(answer)
            child.answered += 1
            if child.restart:
                # its last answer: it exits now. Its end is not awaited (the end of its pipe): a process the
                # agent forked and left running holds the pipe open, and the rest of the batch, or a queued
                # one in its place, would wait for that process
                kill(child.pid)
            child.since, child.deadline = now, now + self.timeout
            if child.answered == len(child.bundles):
                self.complete(child)

    def complete(self, child: Child) -> None:
        """``child`` answered its whole ``check`` batch: hand it the next queued batch (or let it wait idle
        for one), unless its last answer said ``restart`` (it exits), then report the finished batch."""
        assert child.job is not None
        done = child.job
        if child.answered:
            child.pace = (child.since - child.batch_start) / child.answered
        child.job, child.bundles, child.answered, child.deadline = None, [], 0, math.inf
        if child.restart:
            self.requeue(child)
        elif child.ahead is not None:  # it is replaying that batch already: its deadline runs on per bundle
            child.job, child.bundles = child.ahead
            child.ahead = None
            child.batch_start = child.since
            child.deadline = child.since + self.timeout
        elif self.queue:  # the next batch first: the worker goes on while the client reads this one
            self.assign(child, *self.queue.popleft())
        else:
            self.idle.append(child)
        self.send({"id": done, "kind": "batch", "verdicts": self.unsent(done)})
        modules, self.to_warm = sorted(self.to_warm), set()
        self.warm(modules)

    def unsent(self, job: int) -> list[dict[str, Any]]:
        """The answers of the finished batch ``job`` not yet sent ahead (:meth:`flush`); forgets the batch."""
        return self.batches.pop(job)[self.sent.pop(job, 0) :]

    def flush(self) -> None:
        """With ``"progress"``: send each running batch's new answers as one ``{"id", "kind": "part",
        "verdicts": [...]}`` line (the batch's answer then holds only the rest). Once per round of the
        loop, which lets verdict lines gather (:data:`_GATHER`): a line per batch per round at most, not
        one per bundle, and a slow agent's verdicts reach the client as they come, not a batch at a time."""
        for job, answers in self.batches.items():
            sent = self.sent.get(job, 0)
            if len(answers) > sent:
                self.send({"id": job, "kind": "part", "verdicts": answers[sent:]})
                self.sent[job] = len(answers)

    def finish(self, child: Child, *, timed_out: bool) -> None:
        """Release ``child`` (:meth:`release`), then answer for its batch (:meth:`finish_batch`)."""
        self.release(child)
        if child in self.idle:
            self.idle.remove(child)
        self.finish_batch(child, timed_out=timed_out)

    def finish_batch(self, child: Child, *, timed_out: bool) -> None:
        """A worker ended: the bundle it was replaying when it died or ran out of time gets a
        ``crash`` / ``timeout`` answer; the rest of the batch goes to a fresh child; a complete batch is
        reported as ``{"id", "kind": "batch", "verdicts": [...]}``."""
        self.requeue(child)
        if child.job is None:  # its batch was reported whole (complete); it exited or died between batches
            child.stderr.close()
            return
        rest = child.bundles[child.answered :]
        answers = self.batches.setdefault(child.job, [])
        if rest and not child.restart:  # not a deliberate exit: the current bundle is the culprit
            if timed_out:
                culprit: dict[str, Any] = {"kind": "timeout", "detail": None}
            else:
                line = last_stderr_line(child.stderr, child.stderr_at)
                culprit = {"kind": "crash", "detail": death(line, child.status)}
            culprit["duration_ms"] = round((time.monotonic() - child.since) * 1000, 3)
            answers.append(culprit)
            rest = rest[1:]
        child.stderr.close()
        if not rest:
            self.send({"id": child.job, "kind": "batch", "verdicts": self.unsent(child.job)})
        modules, self.to_warm = sorted(self.to_warm), set()
        self.warm(modules)
        if rest:
            self.dispatch(child.job, rest)

    def warm(self, modules: list[Any]) -> None:
        """Import the modules a replay imported lazily, so the next children start with
        them: an SDK imports most of itself on the first request, which each fresh child would pay again
        (0.7 s per replay for the OpenAI example). Only modules the agent's own code imported are named,
        and importing is what the zygote already does for the entrypoint. Raises :class:`Threaded` when an
        import started a thread: forking is no longer safe."""
        import importlib

        fresh = [m for m in modules if isinstance(m, str) and m not in sys.modules and m != "__main__"]
        for name in fresh:
            with contextlib.suppress(Exception):  # not importable on its own (a dynamic module): skip
                importlib.import_module(name)
        if fresh:
            if threading.active_count() > 1:
                raise Threaded()
            prepare(self.config)  # the workers forked from now on start from this state
            gc.collect()
            gc.freeze()

    def drain(self, child: Child) -> bool:
        """Read what ``child`` wrote and this loop did not read yet, before it is judged out of time: while
        the zygote was busy (preloading a slow import, :meth:`warm`), an answer given in time waited in
        the pipe. Reads at most :data:`_DRAIN_READS` times (a child that never stops writing is still
        judged). Returns False when ``child`` ended meanwhile (it is finished here, not timed out)."""
        poll = select.poll()
        poll.register(child.result_fd, select.POLLIN)
        for _ in range(_DRAIN_READS):
            if not poll.poll(0):
                break
            data = os.read(child.result_fd, 65536)
            if not data:
                self.finish(child, timed_out=False)
                return False
            self.received(child, data)
        return True

    def pump(self) -> None:
        """Start queued batches while the worker cap allows (a worker ended, or is idle), then hand the next
        ones ahead to running workers (:meth:`hand_ahead`)."""
        while self.queue and (self.idle or self.cap is None or len(self.children) < self.cap):
            self.dispatch(*self.queue.popleft())
        while self.queue and self.hand_ahead(*self.queue[0]):
            self.queue.popleft()

    def _gather_for(self, now: float) -> float:
        """How long to let verdict lines gather: :data:`_GATHER`, or less when a batch's last verdict is
        due sooner (at the pace of its verdicts so far, or of the worker's last batch when none came yet),
        so the batch is reported without waiting."""
        wait = _GATHER
        for child in self.children.values():
            if child.job is None:
                continue
            if child.answered:
                pace = (child.since - child.batch_start) / child.answered
            elif child.pace:  # a batch handed ahead has just begun: the pace of the worker's last one
                pace = child.pace
            else:
                continue
            remaining = len(child.bundles) - child.answered
            wait = min(wait, child.since + remaining * pace - now)
        return max(0.0, wait)

    def idle_at_end(self) -> bool:
        """True when no worker is replaying (the normal end of a check: every verdict is in, the workers
        wait for a batch): they run no agent code, so the client need not wait while they are reaped.
        A worker still replaying (Ctrl-C) is reaped before the client hears the zygote stop."""
        return all(child.job is None for child in self.children.values())

    def gathers(self, child: Child) -> bool:
        """Gather while ``child`` replays; not when it waits for its next batch."""
        return child.job is not None

    def expire(self, child: Child, now: float) -> None:
        """Judge ``child`` out of time only after reading what it wrote in time (:meth:`drain`)."""
        if self.drain(child) and child.deadline <= now:
            self.finish(child, timed_out=True)

    def settle(self, now: float, gather: bool) -> None:
        """Start queued batches, then let verdict lines gather (a job from the client ends the wait: a
        worker may be waiting for it)."""
        self.pump()
        if self.progress:
            self.flush()
        if gather:
            # a worker replaying the last bundle of its batch ends the wait with that verdict: the batch is
            # then reported at once (at a run's end, the client waits for it)
            children = self.children.values()
            last = [c.result_fd for c in children if c.job is not None and c.answered >= len(c.bundles) - 1]
            select.select([self.proto_in, *last], [], [], self._gather_for(now))
