"""The one order the diff puts concurrent sibling calls in, on both sides (issue 12; issue 28).

Calls the recording proves concurrent (replay's ``auto`` groups: an ``asyncio.gather``, a thread pool's
siblings) are sorted by identity, then input, so two recordings whose siblings finished in another order
line up. Proof is per recording, and scheduling decides it: the same LlamaIndex ``FunctionAgent`` runs its
two tools in overlapping tasks in one run and, when the first task ends before the second starts, one
after the other in the next. So a group proven on one side makes the other side's matching run of
siblings (consecutive calls under the same parent, the same identities) a group too; otherwise one run
sorts and the other does not, and the same code diffs as one tool removed and added.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from stepfork.analysis.diff._behavior import BehaviorStep
from stepfork.replay.noise.origins import collect_ids

Side = tuple[list[BehaviorStep], list[list[BehaviorStep]]]
"""A side of the diff in sibling order: its steps, and its runs of two or more sorted siblings."""

_ROOT = object()  # the parent of a call recorded without one


def sibling_orders(
    baseline: tuple[Any, list[BehaviorStep]], candidate: tuple[Any, list[BehaviorStep]]
) -> tuple[Side, Side]:
    """Put each side's concurrent siblings in the diff's order.

    Args:
        baseline, candidate: ``(trace, steps)``: a loaded :class:`stepfork.trace.Trace` and its behaviour
            steps (``extract_behavior``), in recorded order.

    Returns:
        For each side, its steps with every group of siblings sorted (identity, then input; then
        :func:`_causal`), and those groups of two or more (for
        :func:`stepfork.replay.noise.siblings.aligned_groups`). A group is proven on its own side, or is
        the run of consecutive siblings with the same identities as a group proven on the other side.
    """
    base_trace, base_steps = baseline
    cand_trace, cand_steps = candidate
    base_groups, base_parents = _proven(base_trace)
    cand_groups, cand_parents = _proven(cand_trace)
    base_proven = _members(base_steps, base_groups)
    cand_proven = _members(cand_steps, cand_groups)
    _adopt(base_steps, base_groups, base_parents, cand_proven)
    _adopt(cand_steps, cand_groups, cand_parents, base_proven)
    return _ordered(base_steps, base_groups), _ordered(cand_steps, cand_groups)


def calls_of(groups: list[list[BehaviorStep]]) -> list[list[tuple[Any, str, Any, Any]]]:
    """``groups`` as :func:`stepfork.replay.noise.siblings.aligned_groups` takes them."""
    return [
        [(s.identity, s.label, s.payload.get("input"), s.payload.get("output")) for s in g] for g in groups
    ]


def _proven(trace: Any) -> tuple[dict[int, int], dict[int, object]]:
    """The groups replay's ``auto`` ordering proves in ``trace`` (call step -> group number, for groups of
    two or more) and each call's parent (call step -> parent id). Requests of background threads are left
    out, as replay's cursor leaves every request out: they are sorted apart (``_compare._requests_apart``),
    and one overlapping two of the agent's calls in turn must not chain those into a group; so is every
    request of a bundle without ``concurrency.json``, where each counts as background."""
    from stepfork.replay.ordering import auto_groups
    from stepfork.replay.plan import extract_all_calls
    from stepfork.trace.concurrency import facts_of
    from stepfork.trace.http_calls import is_http_call

    facts = facts_of(trace)

    def background(call: Any) -> bool:
        if call.kind != "tool" or not is_http_call(call.name):
            return False
        fact = facts.calls.get(call.call_event_id) if facts is not None else None
        return fact is None or bool(fact.background)

    calls = [call for call in extract_all_calls(list(trace.events)) if not background(call)]
    group_of: dict[int, int] = {}
    for number, (start, stop) in enumerate(auto_groups(calls, facts)):
        if stop - start > 1:
            for call in calls[start:stop]:
                group_of[call.step] = number
    return group_of, {call.step: call.parent_id or _ROOT for call in calls}


def _is_call(step: BehaviorStep) -> bool:
    return step.step_type in ("tool", "llm", "http")  # http: the agent's own requests keep their place


def _members(steps: list[BehaviorStep], group_of: dict[int, int]) -> list[Counter[tuple[str, str]]]:
    """The identities of each proven group of ``steps``, in order."""
    members: dict[int, Counter[tuple[str, str]]] = {}
    for step in steps:
        if _is_call(step) and step.step in group_of:
            members.setdefault(group_of[step.step], Counter())[step.identity] += 1
    return list(members.values())


def _adopt(
    steps: list[BehaviorStep],
    group_of: dict[int, int],
    parent_of: dict[int, object],
    other: list[Counter[tuple[str, str]]],
) -> None:
    """Make groups (in ``group_of``, in place) of the runs of ``steps`` that match a group of the other
    side: consecutive calls, in no group yet, under one parent, with the group's identities. The first
    such run after the previous match is taken, so groups pair in order."""
    number = max(group_of.values(), default=-1) + 1
    at = 0
    for identities in other:
        size = sum(identities.values())
        for start in range(at, len(steps) - size + 1):
            window = steps[start : start + size]
            if (
                all(_is_call(s) and s.step not in group_of for s in window)
                and len({parent_of.get(s.step) for s in window}) == 1
                and Counter(s.identity for s in window) == identities
            ):
                for s in window:
                    group_of[s.step] = number
                number += 1
                at = start + size
                break


def _ordered(steps: list[BehaviorStep], group_of: dict[int, int]) -> Side:
    """``steps`` with each group sorted, and the groups of two or more."""
    if not group_of:
        return steps, []
    from stepfork.trace.canonical import canonical_json

    def key(step: BehaviorStep) -> tuple[Any, ...]:
        return (step.step_type, step.label, canonical_json(step.payload.get("input")))

    out: list[BehaviorStep] = []
    runs: list[list[BehaviorStep]] = []
    run: list[BehaviorStep] = []
    current: int | None = None
    for step in steps:
        group = group_of.get(step.step) if _is_call(step) else None
        if group is None or group != current:
            runs.append(_causal(sorted(run, key=key)))
            out.extend(runs[-1])
            run = []
        current = group
        if group is None:
            out.append(step)
        else:
            run.append(step)
    runs.append(_causal(sorted(run, key=key)))
    out.extend(runs[-1])
    return out, [r for r in runs if len(r) > 1]


def _causal(run: list[BehaviorStep]) -> list[BehaviorStep]:
    """``run`` (sorted siblings) with each step after every step whose output holds an id its input
    echoes, the sorted order kept otherwise (a cycle keeps it too).

    A call whose request echoes an id another call's answer made (the ``call_id`` of a tool call sent back
    with its result) ran after it, whatever the concurrency facts say, and the diff's one renaming of ids
    is built in step order: put first, the echo would meet the id before the answer that paired it, and
    two recordings of the same code would differ (issue 30: an OpenAI Agents SDK run, whose model calls
    run in child tasks of the run's task, is a group of ``auto`` siblings)."""
    if len(run) < 2:
        return run
    outputs = [collect_ids([step.payload.get("output")]) for step in run]
    inputs = [collect_ids([step.payload.get("input")]) for step in run]
    remaining = list(range(len(run)))
    order: list[int] = []
    while remaining:
        ready = next(
            (i for i in remaining if not any(j != i and inputs[i] & outputs[j] for j in remaining)),
            remaining[0],
        )
        order.append(ready)
        remaining.remove(ready)
    return [run[i] for i in order]
