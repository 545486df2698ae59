"""Concurrency facts of an imported trace, from its span times (issue 15: "span times give the recorded
order and the concurrency facts").

A recording's ``concurrency.json`` (format in :mod:`stepfork.trace.concurrency`) says which lane (thread,
asyncio task) made each call and when it started and ended. Spans carry no thread or task, only times, so
an import derives the facts from the times alone:

- ``start_us``/``end_us``: the span's start and end in microseconds since the trace started (its earliest
  span), the end rounded up so that spans overlapping by less than a microsecond still overlap;
  ``end_us`` null when the call's outcome is not in the bundle;
- lanes: sibling calls (same parent event) ran side by side when their *branches* overlap in time: the
  spans just below the two calls' lowest common ancestor span on the way to each call (the calls' own
  spans when they share their parent span: an ``asyncio.gather`` of traced tools; the framework's task
  spans when it wraps each call in one: LangGraph runs each tool call of a model turn as its own ``tools``
  task in a thread pool, and the tool spans themselves may not overlap while the tasks did). Siblings are
  split into clusters linked by such overlaps, in start order. A call alone in its cluster ran in its
  parent's lane (run_start's lane for calls of the run), as a sequential step does; each member of a
  cluster of two or more gets a lane of its own (an asyncio task of the parent's thread) with the other
  members as ``alive_tasks``.
- LangGraph supersteps: branches whose spans carry LangGraph's run metadata (the ``metadata`` attribute
  OpenInference's LangChain instrumentor writes) with the same ``langgraph_step`` and different
  ``langgraph_path`` are distinct tasks of one superstep, which LangGraph runs side by side (a model turn's
  tool calls under ``ToolNode``): they are concurrent even when their spans happen not to overlap (a pool
  that ran one task after the other in production may not in the replay). Two calls inside one task share
  its ``langgraph_path`` and keep their order.

So replay's ``auto`` ordering (:func:`stepfork.replay.ordering.auto_groups`) serves a cluster's calls in
whichever order the live run makes them, and keeps every other call in recorded order.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from stepfork.trace.concurrency import EXTENSION_NAME, FORMAT

FILE_NAME = f"{EXTENSION_NAME}.json"
"""The extension file the facts are saved in (listed in integrity.json)."""


PathSpan = tuple[str, int, int, "tuple[Any, str] | None"]
"""One span on a call's path: ``(span_id, start_ns, end_ns, task)``; ``task`` from :func:`superstep_task`."""


def superstep_task(attributes: dict[str, Any]) -> tuple[Any, str] | None:
    """``(langgraph_step, langgraph_path as JSON)`` from a span's ``metadata`` attribute (a JSON object, as
    OpenInference's LangChain instrumentor writes LangGraph's run metadata), or None when it has neither."""
    metadata = attributes.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return None
    if not isinstance(metadata, dict) or "langgraph_step" not in metadata or "langgraph_path" not in metadata:
        return None
    return metadata["langgraph_step"], json.dumps(metadata["langgraph_path"], sort_keys=True, default=str)


@dataclass(frozen=True)
class CallSpan:
    """One imported call: its call event ``event_id``, the ``parent`` event id, its span's
    ``start_ns``/``end_ns`` (Unix epoch ns; ``end_ns`` None when the bundle holds no outcome), and
    ``path``: its span's ancestors from the trace's root down to its own span,
    ``((span_id, start_ns, end_ns, task), ...)`` (:data:`PathSpan`)."""

    event_id: str
    parent: str
    start_ns: int
    end_ns: int | None
    path: tuple[PathSpan, ...] = ()


NEVER = 1 << 62
"""The end of a call that never ended: it overlaps everything after its start."""


Branch = tuple[int, int, "tuple[Any, str] | None"]


def _branches(one: CallSpan, two: CallSpan) -> tuple[Branch, Branch]:
    """``(start_ns, end_ns, task)`` of the two calls' branches: the spans just below their lowest common
    ancestor (the calls' own intervals, with no task, when the paths are unknown)."""
    own = ((one.start_ns, one.end_ns or NEVER, None), (two.start_ns, two.end_ns or NEVER, None))
    if not one.path or not two.path:
        return own
    for mine, theirs in zip(one.path, two.path, strict=False):
        if mine[0] != theirs[0]:
            open_one = mine is one.path[-1] and one.end_ns is None  # a call that never ended
            open_two = theirs is two.path[-1] and two.end_ns is None
            first = (mine[1], NEVER if open_one else mine[2], mine[3])
            second = (theirs[1], NEVER if open_two else theirs[2], theirs[3])
            return first, second
    return own


def concurrent(one: CallSpan, two: CallSpan) -> bool:
    """True when the two sibling calls' branches overlap in time, or are distinct tasks of one LangGraph
    superstep (module docstring)."""
    first, second = _branches(one, two)
    task_one, task_two = first[2], second[2]
    if task_one is not None and task_two is not None and task_one[0] == task_two[0] and task_one != task_two:
        return True  # two tasks of one LangGraph superstep
    return first[0] < second[1] and second[0] < first[1]


def _clusters(siblings: list[CallSpan]) -> list[list[CallSpan]]:
    """``siblings`` (one parent) in start order, cut into runs linked by :func:`concurrent` pairs."""
    ordered = sorted(siblings, key=lambda c: (c.start_ns, c.end_ns or c.start_ns))
    clusters: list[list[CallSpan]] = []
    for call in ordered:
        if clusters and any(concurrent(call, member) for member in clusters[-1]):
            clusters[-1].append(call)
        else:
            clusters.append([call])
    return clusters


def span_facts(root_id: str, origin_ns: int, calls: list[CallSpan]) -> dict[str, Any]:
    """The ``concurrency.json`` value of an imported trace (module docstring).

    Args:
        root_id: the run_start event id (its lane is lane 0).
        origin_ns: when the trace started (Unix epoch ns): times are microseconds since then.
        calls: every imported call with a call event in the bundle.

    Returns:
        ``{"format", "root", "root_lane", "lanes", "calls"}`` as :mod:`stepfork.trace.concurrency` reads it.
    """
    lanes: list[dict[str, Any]] = [{"thread_no": 0, "task_no": None, "thread": "imported", "task": None}]
    by_parent: dict[str, list[CallSpan]] = defaultdict(list)
    for call in calls:
        by_parent[call.parent].append(call)
    cluster_of: dict[str, list[CallSpan]] = {}
    for siblings in by_parent.values():
        for cluster in _clusters(siblings):
            for call in cluster:
                cluster_of[call.event_id] = cluster
    lane_of: dict[str, int] = {root_id: 0}
    task_of: dict[str, int] = {}
    tasks = 0
    entries: dict[str, dict[str, Any]] = {}
    # parents start no later than their children (a span contains its children), so a parent's lane is
    # known when its children are placed
    for call in sorted(calls, key=lambda c: (c.start_ns, c.end_ns or c.start_ns)):
        cluster = cluster_of[call.event_id]
        if len(cluster) == 1:
            lane = lane_of.get(call.parent, 0)
        else:
            tasks += 1
            lane = len(lanes)
            task_of[call.event_id] = tasks
            lanes.append({"thread_no": 0, "task_no": tasks, "thread": "imported", "task": f"span-{tasks}"})
        lane_of[call.event_id] = lane
        start_us = max(0, call.start_ns - origin_ns) // 1000
        end_us = None if call.end_ns is None else -(-max(0, call.end_ns - origin_ns) // 1000)
        entries[call.event_id] = {"lane": lane, "start_us": start_us, "end_us": end_us, "alive_tasks": []}
    for call in calls:
        cluster = cluster_of[call.event_id]
        if len(cluster) > 1:
            alive = [task_of[o.event_id] for o in cluster if o is not call]
            entries[call.event_id]["alive_tasks"] = sorted(alive)
    return {"format": FORMAT, "root": root_id, "root_lane": 0, "lanes": lanes, "calls": entries}
