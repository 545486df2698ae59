"""Calls on their own clock: a background thread's rounds, and calls a run ended during, are timing.

A thread without the agent's context (``background`` in ``concurrency.json``: a feature-flag poller, a
heartbeat, a library's refresh) repeats its request on a timer, so two runs of unchanged code make it a
different number of times, and the run may end while one round waits for its answer. Replay already
serves such extra rounds with the last recorded answer (:mod:`stepfork.replay.requests`); diff takes the
same view (docs/diff.md, "Calls on their own clock"):

- a background round the run ended during (its outcome is the HTTP capture's ``incomplete`` response, or
  the recorder's ``UnfinishedCallError``) is not compared;
- of a background request both runs made (same label and redacted canonical input), the rounds beyond the
  smaller count are not compared;
- a call of the agent's own that a run ended during (a task it did not wait for) is not compared, nor
  the other run's call with the same label and input: whether its answer came before the end is timing.

All are counted (``DiffResult.not_compared``) and named in the report. A background request only
one run made is still added or removed, and the agent's own requests (``background`` false, or a bundle
without the facts) are compared one for one. ``--strict`` compares every round.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from stepfork.analysis.diff._behavior import BehaviorStep
from stepfork.trace.errors import INCOMPLETE_RESPONSE as INCOMPLETE
from stepfork.trace.errors import UNFINISHED_TYPE


def background_ids(trace: Any) -> frozenset[str] | None:
    """The call event ids of ``trace``'s calls whose ``background`` fact is true (``concurrency.json``);
    None when the bundle holds no facts (recorded before them)."""
    from stepfork.trace.concurrency import facts_of

    facts = facts_of(trace)
    if facts is None:
        return None
    return frozenset(call_id for call_id, fact in facts.calls.items() if fact.background)


def _unfinished(step: BehaviorStep) -> bool:
    output = step.payload.get("output")
    if not isinstance(output, dict):
        return False
    if step.payload.get("status") == "error":
        return output.get("error_type") == UNFINISHED_TYPE
    # the HTTP captures' form (stepfork.integrations._http_streams.snapshot), for a request or an LLM call
    captured = step.step_type in ("http", "llm")
    return captured and output.get("incomplete") == INCOMPLETE and not output.get("status")


def _key(step: BehaviorStep) -> tuple[str, bytes]:
    from stepfork.trace.canonical import canonical_json

    return step.label, canonical_json(step.payload.get("input"))


def _drop_ended_calls(
    baseline: list[BehaviorStep],
    candidate: list[BehaviorStep],
    background: tuple[set[int], set[int]],
    drop: tuple[set[int], set[int]],
) -> None:
    """Add to ``drop`` each call of the agent's own (not a background round) that a run ended during, and
    the first call of the other run with the same label and input, its counterpart, whose outcome came
    only because that run lasted longer: whether a call the agent did not wait for returned before the
    end is timing. Without a counterpart (the other run ended before making it) it is dropped alone."""
    sides = (baseline, candidate)
    for side in (0, 1):
        steps, other = sides[side], sides[1 - side]
        for i, step in enumerate(steps):
            if i in background[side] or i in drop[side] or not _unfinished(step):
                continue
            drop[side].add(i)
            key = _key(step)
            for j, candidate_step in enumerate(other):
                if j in background[1 - side] or j in drop[1 - side]:
                    continue
                if candidate_step.step_type == step.step_type and _key(candidate_step) == key:
                    drop[1 - side].add(j)
                    break


def drop_timing_calls(
    baseline: list[BehaviorStep],
    candidate: list[BehaviorStep],
    base_background: frozenset[str] | None,
    cand_background: frozenset[str] | None,
) -> tuple[list[BehaviorStep], list[BehaviorStep], int]:
    """``(baseline, candidate, dropped)``: both step lists without the background rounds that are timing
    (module docstring), and how many rounds were dropped on both sides together. Lists are returned as
    given (the same objects) when neither side holds a background request."""

    def rounds(steps: list[BehaviorStep], ids: frozenset[str]) -> list[int]:
        return [i for i, s in enumerate(steps) if s.step_type == "http" and s.event_id in ids]

    base_rounds = rounds(baseline, base_background or frozenset())
    cand_rounds = rounds(candidate, cand_background or frozenset())
    drop: tuple[set[int], set[int]] = (set(), set())
    _drop_ended_calls(baseline, candidate, (set(base_rounds), set(cand_rounds)), drop)
    if not base_rounds and not cand_rounds and not drop[0] and not drop[1]:
        return baseline, candidate, 0
    kept: list[Counter[tuple[str, bytes]]] = [Counter(), Counter()]
    for side, (steps, indexes) in enumerate(((baseline, base_rounds), (candidate, cand_rounds))):
        for i in indexes:
            if _unfinished(steps[i]):
                drop[side].add(i)
            else:
                kept[side][_key(steps[i])] += 1
    for side, (steps, indexes) in enumerate(((baseline, base_rounds), (candidate, cand_rounds))):
        other = kept[1 - side]
        seen: Counter[tuple[str, bytes]] = Counter()
        for i in indexes:
            if i in drop[side]:
                continue
            key = _key(steps[i])
            seen[key] += 1
            if key in other and seen[key] > other[key]:  # an extra round of a request both runs made
                drop[side].add(i)
    dropped = len(drop[0]) + len(drop[1])
    return (
        [s for i, s in enumerate(baseline) if i not in drop[0]],
        [s for i, s in enumerate(candidate) if i not in drop[1]],
        dropped,
    )
