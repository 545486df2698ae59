"""Units and candidate bundles of ``minimize``: which events belong to which recorded call, and a copy of
a trace keeping only some calls (analysis/minimize.py, steps 2 and 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Units:
    """Recorded calls as units: ids, parent unit (nesting by time), owned event positions, call steps."""

    ids: list[int]
    parents: dict[int, int | None]
    events_of: dict[int, frozenset[int]]  # unit -> event positions it owns
    steps: dict[int, int]
    labels: dict[int, str] = field(default_factory=dict)  # unit -> "tool lookup", "llm openai/gpt-4o"


def extract_units(trace: Any) -> Units:
    """Return the recorded calls of ``trace`` as :class:`Units` (a call owns its outcome, the error events
    under them and non-call events recorded inside its span below it; a call has a parent unit when an
    ancestor call on its ``parent_id`` chain also encloses it in time, so ``asyncio.gather`` siblings,
    whose spans overlap, are independent units while the reference's chained golden bundles stay flat)."""
    from stepfork.replay import extract_recorded_calls

    events = list(trace.events)
    calls = extract_recorded_calls(trace, mode="live")  # every call; nesting decided below, by time
    spans = [(c.position, c.end_position if c.end_position is not None else len(events)) for c in calls]
    parents: dict[int, int | None] = {}
    owned: dict[int, set[int]] = {
        i: {c.position} | ({c.end_position} if c.end_position is not None else set())
        for i, c in enumerate(calls)
    }
    call_at = {c.position: i for i, c in enumerate(calls)}
    position_of: dict[str, int] = {}
    for position, event in enumerate(events):
        position_of.setdefault(event.id, position)

    def ancestors(position: int) -> set[int]:
        """The calls on the ``parent_id`` chain above the event at ``position`` (issue 12: nesting needs
        both the chain and the time span, so concurrent siblings, whose spans overlap, stay apart)."""
        found: set[int] = set()
        seen: set[int] = set()
        parent = events[position].parent_id
        while parent is not None:
            at = position_of.get(parent)
            if at is None or at in seen or at >= position:
                break
            seen.add(at)
            if at in call_at:
                found.add(call_at[at])
            parent = events[at].parent_id
        return found

    for i, (start, _) in enumerate(spans):
        above = ancestors(start)
        enclosing = [j for j, (s, e) in enumerate(spans) if s < start < e and j in above]
        parents[i] = max(enclosing, key=lambda j: spans[j][0]) if enclosing else None
    ids_of = {events[p].id: i for i, c in enumerate(calls) for p in owned[i]}
    for position, event in enumerate(events):
        kind = str(getattr(event.type, "value", event.type))
        if kind in ("tool_call", "llm_request", "tool_result", "llm_response", "run_start", "run_end"):
            continue
        if kind == "error" and event.parent_id in ids_of:
            owned[ids_of[event.parent_id]].add(position)
            continue
        above = ancestors(position)
        inside = [j for j, (s, e) in enumerate(spans) if s < position < e and j in above]
        if inside:
            owned[max(inside, key=lambda j: spans[j][0])].add(position)
    return Units(
        list(range(len(calls))),
        parents,
        {i: frozenset(p) for i, p in owned.items()},
        {i: c.step for i, c in enumerate(calls)},
        {i: f"{c.kind} {c.label}" for i, c in enumerate(calls)},
    )


def candidate(trace: Any, units: Units, keep: frozenset[int]) -> Any:
    """A copy of ``trace`` holding only the events of the kept units (and every non-call event)."""
    dropped = {p for u in units.ids if u not in keep for p in units.events_of[u]}
    events = list(trace.events)
    parent_of = {e.id: e.parent_id for e in events}
    kept_ids = {e.id for i, e in enumerate(events) if i not in dropped}
    new_events: list[Any] = []
    new_step: dict[int, int] = {}
    for i, event in enumerate(events):
        if i in dropped:
            continue
        parent = event.parent_id
        while parent is not None and parent not in kept_ids:
            parent = parent_of.get(parent)
        new_step[event.step] = len(new_events)  # steps are renumbered to the line index (validation)
        new_events.append(event.model_copy(update={"parent_id": parent, "step": len(new_events)}))
    update: dict[str, Any] = {"events": new_events}
    if trace.failure is not None:
        errors = [e for e in new_events if str(getattr(e.type, "value", e.type)) == "error"]
        step = new_step.get(trace.failure.step, errors[-1].step if errors else trace.failure.step)
        update["failure"] = trace.failure.model_copy(update={"step": step})
    copy = trace.model_copy(update=update)
    from stepfork.trace.concurrency import attach_facts, facts_of

    attach_facts(copy, facts_of(trace))  # saved as the candidate's concurrency.json (replay ordering)
    return copy
