"""``diff_traces``: compare the behaviour of two recorded runs (spec/cli-reference.txt, "diff"; issue 5).

Steps are aligned by call identity (``(step_type, label)``) with :class:`difflib.SequenceMatcher`, not by
index, so one inserted call is one added step rather than a cascade of changes (CASES.md C7; the reference
aligned by index, REFERENCE-NOTES.md section 9 item 12). The final ``run`` steps are always paired.
Aligned steps are compared field by field; every difference carries its JSON path (``output.price``),
the expected (baseline) and actual (candidate) value. Null and an absent key are different values.

Issue 12: calls the recording proves concurrent (an ``asyncio.gather`` or a thread pool's siblings, the
groups of replay's ``auto`` ordering) are put in one canonical order on both sides (identity, then input)
before alignment, so siblings align by identity, not by the order they happened to finish in; a group
proven on one side only makes the other side's matching siblings a group too (``_siblings``).

Issue 28: noise is decided by :mod:`stepfork.replay.noise`, the rule replay's output comparison uses too.
One :class:`~stepfork.replay.noise.Comparison` serves the whole diff, step by step in order: the values a
provider or framework makes per request (ids, creation times, request ids, dates, fingerprints,
durations) are ignored where the rules name them, in every shape the capture writes (JSON bodies, SSE
events, headers) and in framework message objects; the provider ids of two aligned outputs are paired
into one renaming, so their echoes in later requests and in the run output compare equal. Ignored
differences are kept on the step as ``ignored``, counted, shown with ``show_ignored``, never part of the
verdict; ``strict`` compares everything.

Issue 29: ``http`` steps (requests outside the agent's order: background fetches, non-LLM requests) come
after the agent's own steps on both sides, sorted by label and input, and are aligned there.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from stepfork.analysis._shared.render import ABSENT
from stepfork.analysis.diff._behavior import (
    BehaviorStep,
    ChangeKind,
    FieldChange,
    extract_behavior,
)
from stepfork.analysis.diff._result import DiffResult, StepDiff, TraceSummary
from stepfork.analysis.diff._siblings import calls_of, sibling_orders
from stepfork.analysis.diff._timing_calls import background_ids, drop_timing_calls
from stepfork.analysis.diff._volatile import check_path_patterns, user_ignore
from stepfork.replay.noise import ABSENT as NOISE_ABSENT
from stepfork.replay.noise import Comparison, Difference, NoiseRules, Origins
from stepfork.replay.noise.compare import rule_path
from stepfork.replay.noise.exchanges import is_llm_exchange
from stepfork.replay.noise.siblings import aligned_groups

__all__ = ["DiffResult", "StepDiff", "TraceSummary", "diff_traces"]


def _load(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, (str, Path)):
        from stepfork.trace import load_verified_trace

        return load_verified_trace(Path(value)), str(value)
    return value, None


def _summary(trace: Any, path: str | None) -> TraceSummary:
    status = getattr(trace.status, "value", trace.status)
    return TraceSummary(
        path=path,
        agent_name=trace.agent_name,
        run_id=trace.run_id,
        status=str(status),
        events=len(trace.events),
    )


_WHERE = {
    ("tool", "input"): "tool_input",
    ("tool", "output"): "tool_output",
    ("llm", "input"): "llm_input",
    ("llm", "output"): "llm_output",
    ("http", "input"): "tool_input",
    ("http", "output"): "tool_output",
    ("run", "output"): "run_output",
}
"""Where each compared field sits, for the noise rules (stepfork.replay.noise.compare.WHERES)."""


def _kind(base: BehaviorStep, cand: BehaviorStep) -> str:
    """The step type whose places the fields take: an ``http`` call that is an LLM API call on both sides
    (another thread's request to a provider) is compared as an ``llm`` call
    (stepfork.replay.noise.exchanges; NEWCOMER2 finding 12)."""
    if (
        base.step_type == "http"
        and is_llm_exchange(base.payload.get("input"))
        and is_llm_exchange(cand.payload.get("input"))
    ):
        return "llm"
    return base.step_type


def _field_change(found: Difference) -> FieldChange:
    path = rule_path(found.path)
    expected = ABSENT if found.expected is NOISE_ABSENT else found.expected
    actual = ABSENT if found.actual is NOISE_ABSENT else found.actual
    kind: ChangeKind = "added" if expected is ABSENT else "removed" if actual is ABSENT else "changed"
    return FieldChange(path=path, kind=kind, expected=expected, actual=actual, noise=found.noise, at=found.at)


def _compare(index: int, base: BehaviorStep, cand: BehaviorStep, scope: Comparison | None = None) -> StepDiff:
    scope = scope if scope is not None else Comparison(None)
    fields: dict[str, ChangeKind] = {}
    changes: list[FieldChange] = []
    ignored: list[FieldChange] = []
    places = _kind(base, cand)
    for name in list(dict.fromkeys([*base.payload, *cand.payload])):
        if name not in base.payload or name not in cand.payload:
            found = [
                Difference(
                    (name,),
                    base.payload.get(name, NOISE_ABSENT),
                    cand.payload.get(name, NOISE_ABSENT),
                )
            ]
        else:
            where = _WHERE.get((places, name), "other")
            found = scope.compare(base.payload[name], cand.payload[name], where, prefix=(name,))
        real = [_field_change(d) for d in found if d.noise is None]
        ignored.extend(_field_change(d) for d in found if d.noise is not None)
        fields[name] = "changed" if real else "unchanged"
        changes.extend(real)
    kind: ChangeKind = "changed" if changes else "unchanged"
    return StepDiff(
        index=index,
        kind=kind,
        step_type=base.step_type,
        label=base.label,
        fields=fields,
        changes=tuple(changes),
        baseline=base,
        candidate=cand,
        ignored=tuple(ignored),
    )


def align_steps(
    baseline: list[BehaviorStep], candidate: list[BehaviorStep], scope: Comparison | None = None
) -> list[StepDiff]:
    """Align two step lists by identity (difflib) and compare paired steps; returns the step diffs.

    The last step of each list (the ``run`` step) is paired unconditionally. A ``replace`` block of the
    alignment (different identities) is reported as removals followed by additions. ``scope``: the
    comparison (its noise rules and its one renaming of ids across every step, in step order); None
    compares strictly.
    """
    base_calls, cand_calls = baseline[:-1], candidate[:-1]
    base_ids, cand_ids = [s.identity for s in base_calls], [s.identity for s in cand_calls]
    opcodes: list[tuple[str, int, int, int, int]]
    if base_ids == cand_ids:  # the same calls in the same order: difflib would say so, in O(n^2) here
        opcodes = [("equal", 0, len(base_ids), 0, len(cand_ids))]
    else:
        opcodes = list(difflib.SequenceMatcher(a=base_ids, b=cand_ids, autojunk=False).get_opcodes())
    out: list[StepDiff] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for b, c in zip(base_calls[i1:i2], cand_calls[j1:j2], strict=True):
                out.append(_compare(len(out), b, c, scope))
            continue
        for b in base_calls[i1:i2]:
            out.append(
                StepDiff(index=len(out), kind="removed", step_type=b.step_type, label=b.label, baseline=b)
            )
        for c in cand_calls[j1:j2]:
            out.append(
                StepDiff(index=len(out), kind="added", step_type=c.step_type, label=c.label, candidate=c)
            )
    out.append(_compare(len(out), baseline[-1], candidate[-1], scope))
    return out


def _requests_apart(steps: list[BehaviorStep], background: frozenset[str] | None) -> list[BehaviorStep]:
    """``steps`` with the background ``http`` steps (requests of threads without the agent's context,
    issue 29; ``background``: their call event ids, None for a bundle without the facts, whose every
    request counts as background) after the agent's other steps, sorted by label and input, before the
    run step: their timing is a library's, so two runs whose background fetch came at another moment line
    up, and a request made in one run only is added or removed. The agent's own requests stay where they
    came, so a reorder of its side effects (shipping before charging) is a change (NEWCOMER6 F1); its
    concurrent ones are sorted with their proven siblings (``_siblings``). Telemetry exports are left
    out (issue 30): their bodies are a run's span ids, times and batching, and a replay never sends or
    compares them (:func:`stepfork.trace.http_calls.is_telemetry`)."""
    from stepfork.trace.canonical import canonical_json

    def apart(step: BehaviorStep) -> bool:
        return step.step_type == "http" and (background is None or step.event_id in background)

    calls = steps[:-1]
    if not any(step.step_type == "http" for step in calls):
        return steps

    def telemetry(step: BehaviorStep) -> bool:
        return step.step_type == "http" and _is_telemetry(step)

    kept = [step for step in calls if not apart(step) and not telemetry(step)]
    requests = [step for step in calls if apart(step) and not telemetry(step)]
    requests.sort(key=lambda step: (step.label, canonical_json(step.payload.get("input"))))
    return [*kept, *requests, steps[-1]]


def _is_telemetry(step: BehaviorStep) -> bool:
    from stepfork.trace.http_calls import is_telemetry

    value = step.payload.get("input")
    method, url = (value.get("method"), value.get("url")) if isinstance(value, dict) else (None, None)
    return isinstance(method, str) and isinstance(url, str) and is_telemetry(method, url)


def diff_traces(
    baseline: Any,
    candidate: Any,
    *,
    ignore: Iterable[str] = (),
    strict: bool = False,
    show_ignored: bool = False,
    noise_rules: Iterable[str | Path] = (),
) -> DiffResult:
    """Compare the behaviour of two runs.

    Args:
        baseline, candidate: a bundle path (``str`` or ``Path`` of a ``.sftrace`` directory) or a loaded
            :class:`stepfork.trace.Trace`.
        ignore: more paths to ignore on every step (diff paths with ``[*]``, ``*`` and ``**``).
        strict: ignore nothing: no noise rule, no renaming of ids, not even ``ignore``.
        show_ignored: make ``str()`` list the ignored differences.
        noise_rules: TOML files of more noise rules (``[[rule]]`` tables, the format of the shipped
            ``stepfork/replay/noise/rules.toml``; docs/diff.md "Noise rules").

    Returns:
        A :class:`DiffResult`; ``equivalent`` is True when every aligned step is unchanged up to noise
        (docs/diff.md): values a provider or framework makes per request, timing fields, new SDK fields
        with empty defaults, and ids that one one-to-one renaming across the whole diff makes equal.

    Raises:
        ValueError: an ``ignore`` pattern with a ``[`` outside ``[*]`` / ``[N]`` (it could only match
            itself; checked before either bundle is read, ``strict`` or not), or a ``noise_rules`` file
            that cannot be read or holds a malformed rule.
        stepfork.trace.TraceStorageError: a path is not a readable bundle (the CLI exits 2); a
            TraceIntegrityError when it does not match its integrity.json.
    """
    ignore = tuple(ignore)
    check_path_patterns(ignore)
    rules = NoiseRules.with_files(noise_rules)  # a bad rules file is refused before the bundles are read
    base_trace, base_path = _load(baseline)
    cand_trace, cand_path = _load(candidate)
    (base_steps, base_groups), (cand_steps, cand_groups) = sibling_orders(
        (base_trace, extract_behavior(base_trace)), (cand_trace, extract_behavior(cand_trace))
    )
    scope = (
        Comparison(None)
        if strict
        else Comparison(
            rules,
            Origins(base_trace),
            Origins(cand_trace),
            ignore=user_ignore(ignore),
            siblings=aligned_groups(calls_of(base_groups), calls_of(cand_groups)),
        )
    )
    rounds = 0
    base_background, cand_background = background_ids(base_trace), background_ids(cand_trace)
    if not strict:  # a background thread's extra rounds, calls a run ended during (_timing_calls)
        base_steps, cand_steps, rounds = drop_timing_calls(
            base_steps, cand_steps, base_background, cand_background
        )
    steps = align_steps(
        _requests_apart(base_steps, base_background), _requests_apart(cand_steps, cand_background), scope
    )
    counts = {k: sum(1 for s in steps if s.kind == k) for k in ("added", "removed", "changed", "unchanged")}
    return DiffResult(
        equivalent=counts["unchanged"] == len(steps),
        baseline=_summary(base_trace, base_path),
        candidate=_summary(cand_trace, cand_path),
        steps=tuple(steps),
        ignored=sum(len(s.ignored) for s in steps),
        renamed=len(scope.renamed()),
        not_compared=rounds,
        show_ignored=show_ignored,
        **counts,
    )
