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
- ``alive_tasks``: the numbers (``task_no`` of ``lanes``) of the other asyncio tasks alive when the call
  started (at most ``MAX_ALIVE``): two calls from tasks alive together ran side by side
  (``asyncio.gather``) even when the calls themselves never overlapped.

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

EXTENSION_NAME = "concurrency"
"""The extension file's name without ``.json``."""

FORMAT = "stepfork-concurrency/1"
"""The ``format`` value of ``concurrency.json``."""

MAX_ALIVE = 64
"""At most this many alive tasks are noted per call (a bound on the file, not on correctness: a call
whose sibling is not listed is only served in recorded order)."""


def _current_task() -> Any:
    asyncio = sys.modules.get("asyncio")  # never imported here just to ask
    if asyncio is None or asyncio._get_running_loop() is None:  # no loop: no task (and no exception)
        return None
    return asyncio.current_task()


class ConcurrencyLog:
    """Collects the concurrency facts of one recording; thread-safe.

    Threads and tasks are held weakly (a finished task is not kept alive), each numbered once, so a thread
    id or task id reused by the interpreter after its owner died never merges two lanes.
    """

    def __init__(self) -> None:
        self._origin = time.perf_counter_ns()
        self._lock = threading.Lock()
        self._threads: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._tasks: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._numbers = itertools.count()  # thread/task numbers: never reused (len() of a weak dict is)
        self._lane_of: dict[tuple[int, int | None], int] = {}
        self._lanes: list[dict[str, Any]] = []
        self._calls: dict[str, list[Any]] = {}
        self._local = threading.local()
        self.root_lane = self.lane()

    def _now_us(self) -> int:
        return (time.perf_counter_ns() - self._origin) // 1000

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
        thread = threading.current_thread()
        with self._lock:
            thread_no = self._threads.get(thread)
            if thread_no is None:
                thread_no = self._threads[thread] = next(self._numbers)
            task_no: int | None = None
            if task is not None:
                task_no = self._tasks.get(task)
                if task_no is None:
                    task_no = self._tasks[task] = next(self._numbers)
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
        return index

    def start(self, call_id: str) -> None:
        """Note that the call event ``call_id`` was just written, in the calling lane.

        Also notes which other asyncio tasks were alive then: two calls from tasks alive together
        (``asyncio.gather`` siblings) may come in another order, even if the calls never overlapped.
        """
        task = _current_task()
        lane = self.lane(task, look=False)
        alive = self._alive_tasks(task) if task is not None else []
        self._calls[call_id] = [lane, self._now_us(), None, alive]

    def _alive_tasks(self, task: Any) -> list[int]:
        """Numbers of the asyncio tasks of this loop other than ``task`` not done yet (at most
        ``MAX_ALIVE``)."""
        asyncio = sys.modules["asyncio"]
        try:
            others = [t for t in asyncio.all_tasks() if t is not task]
        except RuntimeError:
            return []
        numbers = []
        with self._lock:
            for other in others[:MAX_ALIVE]:
                number = self._tasks.get(other)
                if number is None:
                    number = self._tasks[other] = next(self._numbers)
                numbers.append(number)
        return sorted(numbers)

    def end(self, call_id: str) -> None:
        """Note that the call ``call_id`` finished (its outcome is about to be written)."""
        entry = self._calls.get(call_id)
        if entry is not None and entry[2] is None:
            entry[2] = self._now_us()

    def to_json(self, root_id: str) -> dict[str, Any]:
        """The ``concurrency.json`` value (see the module docstring); ``root_id`` is run_start's id."""
        with self._lock:
            lanes = [dict(lane) for lane in self._lanes]
        calls = {
            call_id: {"lane": lane, "start_us": start, "end_us": end, "alive_tasks": alive}
            for call_id, (lane, start, end, alive) in list(self._calls.items())
        }
        return {
            "format": FORMAT,
            "root": root_id,
            "root_lane": self.root_lane,
            "lanes": lanes,
            "calls": calls,
        }


class CallFacts:
    """The concurrency facts of one recorded call, as read back: ``lane``, ``start_us``, ``end_us``."""

    __slots__ = ("alive", "end_us", "lane", "start_us")

    def __init__(
        self, lane: int, start_us: int, end_us: int | None, alive: frozenset[int] = frozenset()
    ) -> None:
        self.lane = lane
        self.start_us = start_us
        self.end_us = end_us
        self.alive = alive
        """Numbers of the other asyncio tasks alive when this call started."""


class ConcurrencyFacts:
    """``concurrency.json`` read back: the facts of each call and the lane of the run's root.

    Attributes: ``root`` (run_start's event id, or None), ``root_lane`` (int), ``calls``
    (``{call event id: CallFacts}``).
    """

    def __init__(
        self,
        root_lane: int,
        calls: dict[str, CallFacts],
        root: str | None = None,
        threads: list[int | None] | None = None,
        tasks: list[int | None] | None = None,
    ) -> None:
        self.root = root
        self.root_lane = root_lane
        self.calls = calls
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
            calls[call_id] = CallFacts(lane, start, end, numbers)
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
        return cls(root_lane, calls, root if isinstance(root, str) else None, threads, tasks)


# Facts travel with a loaded Trace without becoming a model field (schema 0.1 has none, and a private
# pydantic attribute would take part in Trace equality): a registry keyed by the trace's id, each entry
# dropped when its trace is collected.
_ATTACHED: dict[int, tuple[weakref.ref[Any], ConcurrencyFacts]] = {}


def attach_facts(trace: Any, facts: ConcurrencyFacts | None) -> None:
    """Make ``facts`` the concurrency facts of ``trace`` (a ``Trace``); None forgets them."""
    key = id(trace)
    if facts is None:
        _ATTACHED.pop(key, None)
        return

    def _drop(_ref: weakref.ref[Any], key: int = key) -> None:
        _ATTACHED.pop(key, None)

    _ATTACHED[key] = (weakref.ref(trace, _drop), facts)


def facts_of(trace: Any) -> ConcurrencyFacts | None:
    """The concurrency facts attached to ``trace`` (by ``load_trace`` or :func:`attach_facts`), or None."""
    entry = _ATTACHED.get(id(trace))
    if entry is not None and entry[0]() is trace:
        return entry[1]
    return None


def load_facts(path: Any) -> ConcurrencyFacts | None:
    """The facts in the bundle at ``path`` (its ``concurrency.json``), or None when absent or unreadable."""
    from stepfork.trace.errors import TraceError
    from stepfork.trace.reading import read_extension

    try:
        return ConcurrencyFacts.parse(read_extension(path, EXTENSION_NAME))
    except (TraceError, ValueError, OSError):
        return None
