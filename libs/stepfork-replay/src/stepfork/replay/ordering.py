"""Orderings of a replay: which recorded call a live call is checked against (issue 6, "Concurrency").

| ordering | a live call is checked against |
|---|---|
| ``auto`` (default) | as ``strict``, except inside a group of sibling calls the recording proves concurrent |
| ``strict`` | the next recorded call, one cursor (replay.txt, "Matching guarantees") |
| ``concurrent`` | any unconsumed call of the current *concurrent group* with the same identity |
| ``unordered`` | any unconsumed call of the current run of *siblings* (same parent) with the same identity |

A concurrent group (:func:`stepfork.replay.plan.concurrent_groups`) is a run of sibling calls (same recorded
parent) whose ``[call, result]`` intervals overlap: an ``asyncio.gather`` fan-out. Within the current group
a live call takes the earliest unconsumed member with its identity (kind, tool name or LLM provider and
model, redacted canonical input), so repeated identical calls are still served in recorded order; groups
are consumed one after the other, so calls recorded sequentially keep their order. A call that matches no
member is checked against the closest one (same kind and name, else the earliest unconsumed) and fails
with the usual ReplayMismatchError and diagnostics, before its body runs.

``auto`` (issue 12) groups consecutive siblings only on proof, read from the events and from the
recorder's ``concurrency.json`` (``stepfork.trace.concurrency``): their ``[call, result]`` lines
interleave; or their recorded start/end times overlap; or they ran on pool threads (another thread than
their parent's: LangGraph ``ToolNode``); or in distinct asyncio tasks (``asyncio.gather``). A call made
in its parent's own lane, or in a lane the group already used, is a fence: a sequential loop stays exact.
Without ``concurrency.json`` (older bundles) only interleaved lines prove concurrency (see
:func:`auto_groups`).

``unordered`` groups every run of consecutive siblings, overlapping or not: threads that run free and make
short calls record them one after the other without overlap, and replay them in another order. It proves
which calls were made with which inputs, not their order among siblings.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from stepfork.replay.matching import CallCursor, LiveInput
from stepfork.replay.plan import RecordedCall, concurrent_groups
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.concurrency import ConcurrencyFacts

ORDERINGS = ("auto", "strict", "concurrent", "unordered")
"""The supported orderings; ``auto`` is the default (issue 12: exact where the recording is sequential)."""

DEFAULT_ORDERING = "auto"


def normalize_ordering(ordering: Any) -> str:
    """Return ``ordering`` as one of :data:`ORDERINGS`.

    Raises:
        ValueError: an unknown ordering, naming the valid ones.
    """
    if ordering not in ORDERINGS:
        raise ValueError(f"unknown replay ordering {ordering!r}; expected one of " + ", ".join(ORDERINGS))
    return str(ordering)


def auto_groups(calls: list[RecordedCall], facts: ConcurrencyFacts | None) -> list[tuple[int, int]]:
    """Split the visible plan into the groups of the ``auto`` ordering (module docstring).

    A call joins the current group when it is a sibling (same ``parent_id``) of the group and the recording
    proves the two could run in either order:

    1. its call line comes before the group's latest outcome line, or (with ``facts``) it started before
       the group's latest recorded end: they overlapped;
    2. it and the group's previous call were both made on a thread other than their parent's: a thread
       pool's workers (one worker may run several calls one after the other; a replay may spread them);
    3. its asyncio task and the previous call's task were alive together (one is in the other's
       ``alive_tasks``), and neither it nor any member ran in the parent's own lane: ``asyncio.gather``
       siblings. A call in the parent's lane is a fence. Tasks that ran one after the other (a framework
       running each step in a fresh task) stay exact: asyncio starts them in order, in replay too.

    Without ``facts`` only rule 1, on lines. Returns ``[start, stop)`` ranges of indices into ``calls``,
    consecutive, covering every call.
    """
    if facts is None:
        return concurrent_groups(calls)
    groups: list[tuple[int, int]] = []
    start = 0
    parent: str | None = None
    reach = -1  # the group's latest outcome line
    until = -1  # the group's latest recorded end (us); "forever" when a member never ended
    fenced = False  # a member ran in the parent's own lane
    previous_pooled = False
    previous: Any = None
    horizon = (calls[-1].position + 1) if calls else 0
    forever = 1 << 62

    for index, call in enumerate(calls):
        end = call.end_position if call.end_position is not None else horizon
        fact = facts.calls.get(call.call_event_id)
        stop = forever if fact is None or fact.end_us is None else fact.end_us
        own_lane = facts.lane_of(call.parent_id)
        own_thread = facts.thread_of(own_lane)
        lane = fact.lane if fact is not None else None
        thread = facts.thread_of(lane)
        inline = lane is not None and lane == own_lane
        pooled = thread is not None and own_thread is not None and thread != own_thread
        if index > start and call.parent_id == parent:
            joins = call.position < reach or (fact is not None and fact.start_us < until)
            if not joins and fact is not None:
                joins = (pooled and previous_pooled) or (
                    not inline and not fenced and _alive_together(facts, previous, fact)
                )
            if joins:
                reach, until = max(reach, end), max(until, stop)
                fenced, previous_pooled, previous = fenced or inline, pooled, fact
                continue
        if index > start:
            groups.append((start, index))
        start, parent, reach = index, call.parent_id, end
        until = stop if fact is not None else -1  # no facts for this call: only lines can prove anything
        fenced, previous_pooled, previous = inline, pooled, fact
    if calls:
        groups.append((start, len(calls)))
    return groups


def _alive_together(facts: ConcurrencyFacts, first: Any, second: Any) -> bool:
    """True when the asyncio tasks of two calls (``CallFacts``) differ and were alive together."""
    if first is None or second is None:
        return False
    one, two = facts.task_of(first.lane), facts.task_of(second.lane)
    return one is not None and two is not None and one != two and (two in first.alive or one in second.alive)


def _identity(kind: str, name: str | None, provider: str | None, model: str | None) -> tuple[Any, ...]:
    # what check_identity compares: the tool name; the LLM's provider and model
    return (kind, name) if kind == "tool" else (kind, provider, model)


class ConcurrentCursor(CallCursor):
    """The ``concurrent`` (``overlap=True``) or ``unordered`` ordering over the visible recorded calls, or
    any other grouping given as ``groups`` (``auto``: :func:`auto_groups`).

    See the module docstring.

    Not thread-safe on its own: the session serializes access. Each call is indexed once, when its group
    becomes current; the recorded canonical input bytes are computed only for groups of two or more.
    """

    __slots__ = ("_by_identity", "_by_input", "_consumed", "_count", "_first", "_group", "_groups")

    def __init__(
        self,
        calls: list[RecordedCall],
        *,
        overlap: bool = True,
        groups: list[tuple[int, int]] | None = None,
    ) -> None:
        super().__init__(calls)
        self._groups = groups if groups is not None else concurrent_groups(calls, overlap=overlap)
        self._group = -1
        self._consumed = bytearray(len(calls))
        self._count = 0
        self._first = 0  # every call before it is consumed
        self._by_identity: dict[tuple[Any, ...], deque[int]] = {}
        self._by_input: dict[tuple[Any, ...], deque[int]] = {}

    def _sync(self) -> bool:
        """Move past consumed calls and into the group of the earliest unconsumed one; False when done."""
        while self._first < len(self.calls) and self._consumed[self._first]:
            self._first += 1
        if self._first >= len(self.calls):
            return False
        while self._group < 0 or self._groups[self._group][1] <= self._first:
            self._group += 1
            self._index_group()
        return True

    def _index_group(self) -> None:
        start, stop = self._groups[self._group]
        self._by_identity = {}
        self._by_input = {}
        if stop - start < 2:
            return
        for index in range(start, stop):
            recorded = self.calls[index]
            key = _identity(recorded.kind, recorded.name, recorded.provider, recorded.model)
            self._by_identity.setdefault(key, deque()).append(index)
            data = self.recorded_input_bytes(recorded)
            self._by_input.setdefault((*key, data), deque()).append(index)

    def _head(self, indices: deque[int] | None) -> RecordedCall | None:
        """The earliest unconsumed call of ``indices`` (consumed ones are dropped lazily)."""
        if indices is None:
            return None
        while indices and self._consumed[indices[0]]:
            indices.popleft()
        return self.calls[indices[0]] if indices else None

    def peek(self) -> RecordedCall | None:
        """The earliest unconsumed recorded call, or None when every call was consumed."""
        return self.calls[self._first] if self._sync() else None

    def select(
        self,
        call: BoundaryCall,
        live: LiveInput,
        compares: Callable[[RecordedCall], bool],
        renames: Callable[[RecordedCall], bool] | None = None,
    ) -> RecordedCall | None:
        """The recorded call to check ``call`` against (None when every call was consumed).

        The earliest unconsumed member of the current group with ``call``'s identity and input (raw
        canonical bytes first, then redacted); failing that, the earliest with its identity whose input
        the live one equals up to the renaming of fresh values (``renames``, a trial that binds nothing:
        two pool threads sending fresh idempotency keys in either order); failing that, the earliest with
        its kind and name (its input is not compared when ``compares`` says False: a hybrid live LLM),
        else the earliest unconsumed member, so the checks that follow raise the right mismatch.
        """
        if not self._sync():
            return None
        start, stop = self._groups[self._group]
        if stop - start < 2:
            return self.calls[self._first]
        key = _identity(call.kind, call.name, call.provider, call.model)
        nearest = self._head(self._by_identity.get(key))
        if nearest is None:
            return self.calls[self._first]
        if not compares(nearest):
            return nearest
        found = self._head(self._by_input.get((*key, live.raw_bytes)))
        if found is None and live.bytes != live.raw_bytes:  # a secret in the live input: compare redacted
            found = self._head(self._by_input.get((*key, live.bytes)))
        if found is None and renames is not None:
            members = [self.calls[i] for i in self._by_identity.get(key, ()) if not self._consumed[i]]
            found = next((member for member in members if renames(member)), None)
        return found if found is not None else nearest

    def consume(self, expected: RecordedCall) -> None:
        """Mark ``expected`` (a member of the current group) consumed."""
        if not self._consumed[expected.index]:
            self._consumed[expected.index] = 1
            self._count += 1
            self._canonical.pop(expected.index, None)  # as CallCursor.consume

    def advance(self) -> None:
        """Consume the earliest unconsumed call (what :meth:`peek` returns)."""
        head = self.peek()
        if head is not None:
            self.consume(head)

    @property
    def pending(self) -> int:
        """Number of recorded calls not consumed yet."""
        return len(self.calls) - self._count

    def remaining_calls(self) -> list[RecordedCall]:
        """The unconsumed calls, in recorded order."""
        consumed = self._consumed
        return [self.calls[index] for index in range(self._first, len(self.calls)) if not consumed[index]]


def make_cursor(calls: list[RecordedCall], ordering: str, facts: ConcurrencyFacts | None) -> CallCursor:
    """The cursor of ``ordering`` (one of :data:`ORDERINGS`) over the visible plan ``calls``.

    ``facts``: the recording's concurrency facts (``stepfork.trace.concurrency.facts_of``), used by
    ``auto``. A plan the ``auto`` grouping leaves all singletons gets the plain strict cursor.
    """
    if ordering == "strict":
        return CallCursor(calls)
    if ordering == "auto":
        groups = auto_groups(calls, facts)
        if len(groups) == len(calls):
            return CallCursor(calls)
        return ConcurrentCursor(calls, groups=groups)
    return ConcurrentCursor(calls, overlap=ordering == "concurrent")
