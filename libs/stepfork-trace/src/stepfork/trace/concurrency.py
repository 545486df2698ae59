"""Concurrency facts of a recording: which thread or task made each call, and when it started and ended.

Schema 0.1 events say nothing about concurrency, and their line order alone cannot tell a thread pool's
calls that happened to run one after the other from calls of one sequential loop. The recorder therefore
writes the extension file ``concurrency.json`` (listed in integrity.json, as ``fork.json`` is; schema 0.1
readers ignore it) with, for every ``tool_call``/``llm_request``:

- ``lane``: an index into ``lanes``, one per (thread, asyncio task) pair that made calls, numbered in order of
  first use; each lane has ``thread_no`` (the same number for every lane of one thread) and names its
  thread and task (names only, for a reader; never used to decide);
- ``start_us``/``end_us``: microseconds on a monotonic clock since the recording started, taken when the
  call event was written and when its outcome was about to be written (``end_us`` null: never finished);
- ``background``: true when the call came from a thread or task without the session in its context (a
  library's background thread, a ``threading.Thread`` started without ``contextvars.copy_context()``),
  false when the agent's own context made it, work the agent submitted to a thread pool included
  (:mod:`stepfork.trace.executors`). Absent in files written before issue 29: unknown. Replay reads it
  for ``http`` calls: a recorded request the agent's context made must come again (docs/replay.md);
- ``alive_tasks``: the numbers (``task_no`` of ``lanes``) of other asyncio tasks alive together with the
  calling task when the call started (at most ``MAX_ALIVE``): two calls from tasks alive together ran side
  by side (``asyncio.gather``) even when the calls themselves never overlapped. The list is the loop's
  tasks when the current loop iteration first asked (``asyncio.all_tasks()`` once per iteration, not once
  per call, which is O(tasks) per call in a large gather): every task listed was alive together with the
  caller at that moment (the caller already existed: a task created later in the iteration runs only at
  the next one, after the snapshot expired); a task created later in the same iteration is left out, and
  a task that ended since may still be listed (it was alive together with the caller). Leaving a task out
  only makes replay keep the recorded order. When the bound cuts, the tasks of the neighbouring calls are
  kept first (the ones replay's ordering compares).

``submit_carries_context`` (top level): true when work submitted to a ``ThreadPoolExecutor`` under the
session ran in its context (:mod:`stepfork.trace.executors`), as every recording since that rule does;
absent (false) in files written before it, whose replays keep the earlier rule: such work was a thread
without the session in its context, so replay decides ``background`` as the recorder did.

``root_lane`` is the lane that entered the session (the lane of ``run_start``). Replay's default ordering
(``stepfork.replay.ordering``) reads these facts: two sibling calls may be served in either order only when
the facts prove they overlapped or ran in different lanes (issue 12, "Concurrency that holds").

This module imports nothing heavy: it runs on the recording hot path (two clock reads per call).
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
import weakref
from typing import Any

from stepfork.trace._attached import Attached, read_parsed

EXTENSION_NAME = "concurrency"
"""The extension file's name without ``.json``."""

FORMAT = "stepfork-concurrency/1"
"""The ``format`` value of ``concurrency.json``."""

RECORD_FACTS = True
"""Internal switch, for benchmarks/bench_concurrency.py only: False records sessions without
``concurrency.json`` (as before issue 12), so the benchmark can measure what the facts cost. Never turn it
off otherwise: replay's default ordering needs the facts to tolerate concurrent calls."""

MAX_ALIVE = 64
"""At most this many alive tasks are noted per call (a bound on the file, not on correctness: a call
whose sibling is not listed is only served in recorded order)."""


def _current_task() -> Any:
    asyncio = sys.modules.get("asyncio")  # never imported here just to ask
    if asyncio is None:
        return None
    loop = asyncio._get_running_loop()
    if loop is None:  # no loop: no task (and no exception)
        return None
    return asyncio.current_task(loop)


_perf_ns = time.perf_counter_ns


class ConcurrencyLog:
    """Collects the concurrency facts of one recording; thread-safe.

    Tasks are held weakly (a finished task is not kept alive) and threads by thread-local state, each
    numbered once, so a thread id or task id reused by the interpreter after its owner died never merges
    two lanes.

    Cost per call (benchmarks/bench_concurrency.py, docs/performance.md "Concurrency facts"): a thread's
    lane is cached thread-locally and a task's in a dict keyed by its id (checked by identity); the clock
    is read raw and converted when the file is written. The alive tasks are not listed per call:
    ``asyncio.all_tasks()`` is O(tasks), so it is taken at most once per loop iteration per event loop
    (a snapshot that expires with a ``call_soon`` callback at the loop's next iteration) and every call
    keeps a reference to it; the calling task is removed and the ``MAX_ALIVE`` bound applied in
    :meth:`to_json`, off the call path. What that changes is written in the module docstring.
    """

    def __init__(self) -> None:
        self._origin = _perf_ns()
        self._lock = threading.Lock()
        # id(task) -> (weak reference, number) / (weak reference, lane): a lookup creates no weak reference
        # (a WeakKeyDictionary does, on every get); a reused id is told apart by the identity check
        self._task_numbers: dict[int, tuple[weakref.ref[Any], int]] = {}
        self._task_lanes: dict[int, tuple[weakref.ref[Any], int, int]] = {}  # (ref, lane, task number)
        self._numbers = itertools.count()  # thread/task numbers: never reused
        self._lane_of: dict[tuple[int, int | None], int] = {}
        self._lanes: list[dict[str, Any]] = []
        # call id -> (lane, start ns, alive snapshot | None, the calling task's number | None), and call id ->
        # end ns: tuples and ints only, which the cyclic GC stops tracking (a list per call made every
        # collection longer as the recording grew)
        self._calls: dict[str, tuple[int, int, tuple[int, ...] | None, int | None]] = {}
        self._ends: dict[str, int] = {}
        self._background: set[str] = set()  # calls from threads without the session in their context
        # id(loop) -> (weak reference to the loop, task numbers): a loop that stopped before the snapshot
        # expired is neither kept alive nor confused with a later loop at the same address
        self._snapshots: dict[int, tuple[weakref.ref[Any], tuple[int, ...]]] = {}
        self._local = threading.local()
        self.root_lane = self.lane()

    def _task_number(self, task: Any) -> int:
        # A task is numbered from its own loop's thread only (its calls, its loop's snapshots), and
        # next() on the counter is atomic: no lock. Entries of dead tasks stay (one per task seen in
        # the recording, as its lane does); a reused id fails the identity check and is numbered anew.
        key = id(task)
        entry = self._task_numbers.get(key)
        if entry is not None and entry[0]() is task:
            return entry[1]
        number = next(self._numbers)
        self._task_numbers[key] = (weakref.ref(task), number)
        return number

    def lane(self, task: Any = None, *, look: bool = True) -> int:
        """The lane index of the calling thread and asyncio task (a new lane on first use).

        ``task``: the current task when the caller already has it (``look=False``).
        """
        if look:
            task = _current_task()
        if task is None:  # plain threads: one lane per thread, cached thread-locally
            cached: int | None = getattr(self._local, "lane", None)
            if cached is not None:
                return cached
        else:  # a task runs on one loop, so in one thread: its lane is cached with it
            entry = self._task_lanes.get(id(task))
            if entry is not None and entry[0]() is task:
                return entry[1]
        thread = threading.current_thread()
        task_no = self._task_number(task) if task is not None else None
        local = self._local
        with self._lock:
            thread_no: int | None = getattr(local, "thread_no", None)
            if thread_no is None:
                thread_no = local.thread_no = next(self._numbers)
            key = (thread_no, task_no)
            index = self._lane_of.get(key)
            if index is None:
                index = self._lane_of[key] = len(self._lanes)
                task_name = task.get_name() if task is not None and hasattr(task, "get_name") else None
                self._lanes.append(
                    {"thread_no": thread_no, "task_no": task_no, "thread": thread.name, "task": task_name}
                )
        if task is None:
            self._local.lane = index
        else:
            assert task_no is not None
            self._task_lanes[id(task)] = (weakref.ref(task), index, task_no)
        return index

    def start(self, call_id: str) -> None:
        """Note that the call event ``call_id`` was just written, in the calling lane.

        In a task, also notes which other asyncio tasks were alive with it (this loop iteration's
        snapshot, see the class docstring): two calls from tasks alive together (``asyncio.gather``
        siblings) may come in another order, even if the calls never overlapped.
        """
        task = _current_task()
        if task is None:
            lane = getattr(self._local, "lane", None)
            if lane is None:
                lane = self.lane(None, look=False)
            self._calls[call_id] = (lane, _perf_ns(), None, None)
            return
        entry = self._task_lanes.get(id(task))
        if entry is None or entry[0]() is not task:
            self.lane(task, look=False)
            entry = self._task_lanes[id(task)]
        self._calls[call_id] = (entry[1], _perf_ns(), self._alive_snapshot(task), entry[2])

    def note_background(self, call_id: str) -> None:
        """Note that the call ``call_id`` came from a thread or task without the session in its context
        (an orphan call, :mod:`stepfork.trace.boundary`): its ``background`` fact is true."""
        self._background.add(call_id)

    def _alive_snapshot(self, task: Any) -> tuple[int, ...]:
        """Numbers of the tasks of ``task``'s loop alive (not done) when this loop iteration first asked,
        ``task`` included; taken once per iteration (class docstring)."""
        loop = task.get_loop()
        key = id(loop)
        cached = self._snapshots.get(key)
        if cached is not None and cached[0]() is loop:
            return cached[1]
        asyncio = sys.modules["asyncio"]
        try:
            tasks = asyncio.all_tasks(loop)
        except RuntimeError:
            return ()
        numbers = tuple(sorted(map(self._task_number, tasks)))
        self._snapshots[key] = (weakref.ref(loop), numbers)
        try:  # expires when the loop starts its next iteration (callbacks queued now run then)
            loop.call_soon(self._snapshots.pop, key, None)
        except RuntimeError:  # a closed loop: never reused
            self._snapshots.pop(key, None)
        return numbers

    def end(self, call_id: str) -> None:
        """Note that the call ``call_id`` finished (its outcome is about to be written)."""
        if call_id in self._calls and call_id not in self._ends:
            self._ends[call_id] = _perf_ns()

    def to_json(self, root_id: str, *, submit_carries_context: bool = True) -> dict[str, Any]:
        """The ``concurrency.json`` value (see the module docstring); ``root_id`` is run_start's id,
        ``submit_carries_context`` the recording session's rule for thread pools (written when true)."""
        with self._lock:
            lanes = [dict(lane) for lane in self._lanes]
        entries = list(self._calls.items())
        origin = self._origin
        ends = dict(self._ends)
        background = set(self._background)
        owners = [entry[3] for _, entry in entries]  # in start order (the dict keeps insertion order)
        calls = {}
        for index, (call_id, (lane, start, snapshot, own)) in enumerate(entries):
            end = ends.get(call_id)
            calls[call_id] = {
                "lane": lane,
                "start_us": (start - origin) // 1000,
                "end_us": None if end is None else (end - origin) // 1000,
                "alive_tasks": _alive_others(snapshot, own, owners, index),
                "background": call_id in background,
            }
        return {
            "format": FORMAT,
            "root": root_id,
            "root_lane": self.root_lane,
            **({"submit_carries_context": True} if submit_carries_context else {}),
            "lanes": lanes,
            "calls": calls,
        }


_NEIGHBOURS = 8  # calls on each side whose tasks are kept first when MAX_ALIVE cuts the list


def _alive_others(
    snapshot: tuple[int, ...] | None, own: int | None, owners: list[Any], index: int
) -> list[int]:
    """The ``alive_tasks`` of the call at ``index``: its snapshot without its own task, at most
    ``MAX_ALIVE``. When the bound cuts, the tasks of the calls started just before and after it come
    first: replay's ``auto`` ordering compares each call with its neighbours (``_alive_together`` in
    stepfork.replay.ordering), so those are the entries that decide."""
    if not snapshot:
        return []
    others = [n for n in snapshot if n != own]
    if len(others) <= MAX_ALIVE:
        return others
    alive = set(others)
    near = owners[max(0, index - _NEIGHBOURS) : index + _NEIGHBOURS + 1]
    kept = list(dict.fromkeys(n for n in near if n is not None and n != own and n in alive))[:MAX_ALIVE]
    chosen = set(kept)
    for number in others:
        if len(kept) >= MAX_ALIVE:
            break
        if number not in chosen:
            kept.append(number)
    return sorted(kept)


class CallFacts:
    """The concurrency facts of one recorded call, as read back: ``lane``, ``start_us``, ``end_us``,
    ``alive``, ``background``."""

    __slots__ = ("alive", "background", "end_us", "lane", "start_us")

    def __init__(
        self,
        lane: int,
        start_us: int,
        end_us: int | None,
        alive: frozenset[int] = frozenset(),
        background: bool | None = None,
    ) -> None:
        self.lane = lane
        self.start_us = start_us
        self.end_us = end_us
        self.alive = alive
        """Numbers of the other asyncio tasks alive when this call started."""
        self.background = background
        """True: made from a thread without the session in its context; False: from the agent's context;
        None: not recorded (a file written before this release)."""


class ConcurrencyFacts:
    """``concurrency.json`` read back: the facts of each call and the lane of the run's root.

    Attributes: ``root`` (run_start's event id, or None), ``root_lane`` (int), ``calls``
    (``{call event id: CallFacts}``), ``submit_carries_context`` (bool: the recorder carried the session
    into work submitted to thread pools; False for files written before that rule).
    """

    def __init__(
        self,
        root_lane: int,
        calls: dict[str, CallFacts],
        root: str | None = None,
        threads: list[int | None] | None = None,
        tasks: list[int | None] | None = None,
        submit_carries_context: bool = False,
    ) -> None:
        self.root = root
        self.root_lane = root_lane
        self.calls = calls
        self.submit_carries_context = submit_carries_context
        self.threads = threads or []
        """``thread_no`` of each lane (None when not recorded)."""
        self.tasks = tasks or []
        """``task_no`` of each lane (None: no asyncio task, or not recorded)."""

    def task_of(self, lane: int | None) -> int | None:
        """The asyncio task number of ``lane``, or None."""
        if lane is None or not 0 <= lane < len(self.tasks):
            return None
        return self.tasks[lane]

    def thread_of(self, lane: int | None) -> int | None:
        """The thread number of ``lane``, or None when unknown."""
        if lane is None or not 0 <= lane < len(self.threads):
            return None
        return self.threads[lane]

    def to_json(self, event_ids: set[str] | None = None) -> dict[str, Any]:
        """The ``concurrency.json`` value of these facts (lanes unnamed), only ``event_ids`` if given."""
        return {
            "format": FORMAT,
            "root": self.root,
            "root_lane": self.root_lane,
            **({"submit_carries_context": True} if self.submit_carries_context else {}),
            "lanes": [
                {"thread_no": thread, "task_no": self.task_of(lane)}
                for lane, thread in enumerate(self.threads)
            ],
            "calls": {
                call_id: {
                    "lane": f.lane,
                    "start_us": f.start_us,
                    "end_us": f.end_us,
                    "alive_tasks": sorted(f.alive),
                    **({} if f.background is None else {"background": f.background}),
                }
                for call_id, f in self.calls.items()
                if event_ids is None or call_id in event_ids
            },
        }

    def lane_of(self, event_id: str | None) -> int | None:
        """The lane of the call ``event_id``, ``root_lane`` for run_start, else None (unknown)."""
        if event_id is None:
            return None
        if event_id == self.root:
            return self.root_lane
        facts = self.calls.get(event_id)
        return facts.lane if facts is not None else None

    @classmethod
    def parse(cls, value: Any) -> ConcurrencyFacts | None:
        """The facts of a parsed ``concurrency.json``, or None when it is absent or not of this format.

        A malformed file is ignored (None) rather than trusted: facts only ever relax the ordering, so
        without them replay falls back to what the events alone prove.
        """
        if not isinstance(value, dict) or value.get("format") != FORMAT:
            return None
        root_lane = value.get("root_lane")
        raw_calls = value.get("calls")
        if type(root_lane) is not int or not isinstance(raw_calls, dict):
            return None
        calls: dict[str, CallFacts] = {}
        for call_id, entry in raw_calls.items():
            if not isinstance(entry, dict):
                return None
            lane, start, end = entry.get("lane"), entry.get("start_us"), entry.get("end_us")
            if type(lane) is not int or type(start) is not int or (end is not None and type(end) is not int):
                return None
            alive = entry.get("alive_tasks")
            numbers = frozenset(n for n in (alive if isinstance(alive, list) else ()) if type(n) is int)
            background = entry.get("background")
            calls[call_id] = CallFacts(
                lane, start, end, numbers, background if type(background) is bool else None
            )
        root = value.get("root")
        lanes = value.get("lanes")
        threads: list[int | None] = []
        tasks: list[int | None] = []
        if isinstance(lanes, list):
            for lane in lanes:
                number = lane.get("thread_no") if isinstance(lane, dict) else None
                threads.append(number if type(number) is int else None)
                task = lane.get("task_no") if isinstance(lane, dict) else None
                tasks.append(task if type(task) is int else None)
        carries = value.get("submit_carries_context") is True
        return cls(root_lane, calls, root if isinstance(root, str) else None, threads, tasks, carries)


_FACTS: Attached[ConcurrencyFacts] = Attached()


def attach_facts(trace: Any, facts: ConcurrencyFacts | None) -> None:
    """Make ``facts`` the concurrency facts of ``trace`` (a ``Trace``); None forgets them."""
    _FACTS.attach(trace, facts)


def facts_of(trace: Any) -> ConcurrencyFacts | None:
    """The concurrency facts attached to ``trace`` (by ``load_trace`` or :func:`attach_facts`), or None."""
    return _FACTS.of(trace)


def load_facts(path: Any) -> ConcurrencyFacts | None:
    """The facts in the bundle at ``path`` (its ``concurrency.json``), or None when absent or unreadable."""
    return read_parsed(path, EXTENSION_NAME, ConcurrencyFacts.parse)
