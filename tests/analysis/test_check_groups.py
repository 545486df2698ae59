"""The summary of ``stepfork check`` groups bundles with the same first divergence: a corpus of 1,000
bundles diverging for one reason prints one group, its count and its first three bundles, not 1,000 lines;
every bundle stays in ``to_dict()`` (``--json``), the JUnit report and the receipts."""

from __future__ import annotations

from stepfork.analysis import BundleVerdict, CheckResult
from stepfork.analysis.check._groups import group_verdicts

INPUT = "call #1: input diverged from the recording at $.order_id (tool 'order_status', step 1)"


def _diverged(
    index: int, detail: str = INPUT, code: str = "input_diverged", step: int | None = 1
) -> BundleVerdict:
    return BundleVerdict(
        bundle=f"runs/shard-{index % 10}/run-{index:04d}.sftrace",
        verdict="DIVERGED",
        outcome="failed",
        code=code,
        detail=detail,
        step=step,
        duration_ms=float(index),
    )


def _unreadable(index: int) -> BundleVerdict:
    bundle = f"runs/shard-{index % 10}/run-{index:04d}.sftrace"
    return BundleVerdict(
        bundle=bundle,
        verdict="COULD NOT EXECUTE",
        outcome="could_not_execute",
        reason="bundle_unreadable",
        # the message names the bundle itself: without it, the messages are alike
        detail=f"invalid_json: {bundle}/events.jsonl line 3 is not JSON; run `stepfork validate {bundle}`",
    )


def _result(verdicts: list[BundleVerdict]) -> CheckResult:
    return CheckResult(
        corpus="runs", entrypoint="agent:run", executor="local (2 jobs)", verdicts=tuple(verdicts)
    )


def test_a_thousand_alike_divergences_are_one_group() -> None:
    verdicts = [_diverged(i) for i in range(1000)]
    text = str(_result(verdicts))
    section = text.split("\nDiverged\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section == [
        f"  1000 bundles (step 1): input_diverged: {INPUT}",
        "    runs/shard-0/run-0000.sftrace",
        "    runs/shard-1/run-0001.sftrace",
        "    runs/shard-2/run-0002.sftrace",
        "    ... and 997 more",
    ]
    assert "Slowest" in text
    assert "  999.0 ms  runs/shard-9/run-0999.sftrace" in text
    assert len(text.splitlines()) < 40
    # the full list stays in --json and the JUnit report
    assert len(_result(verdicts).to_dict()["verdicts"]) == 1000
    assert _result(verdicts).junit_xml().count("<failure") == 1000


def test_different_first_divergences_are_different_groups_largest_first() -> None:
    other = "call #2: input diverged from the recording at $.text (tool 'notify', step 2)"
    verdicts = [
        _diverged(0, other, step=2),
        *(_diverged(i) for i in range(1, 5)),
        _diverged(5, "output differs at $.status", code="behavior_mismatch", step=None),
    ]
    groups = group_verdicts(verdicts)
    assert [(g.why, g.step, len(g.bundles)) for g in groups] == [
        ("input_diverged", 1, 4),
        ("input_diverged", 2, 1),
        ("behavior_mismatch", None, 1),
    ]
    section = str(_result(verdicts)).split("\nDiverged\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section == [
        f"  4 bundles (step 1): input_diverged: {INPUT}",
        "    runs/shard-1/run-0001.sftrace",
        "    runs/shard-2/run-0002.sftrace",
        "    runs/shard-3/run-0003.sftrace",
        "    ... and 1 more",
        f"  runs/shard-0/run-0000.sftrace (step 2): input_diverged: {other}",  # a group of one: as before
        "  runs/shard-5/run-0005.sftrace: behavior_mismatch: output differs at $.status",
    ]


def test_could_not_execute_groups_messages_that_differ_only_by_their_bundle() -> None:
    verdicts = [_unreadable(i) for i in range(3)]
    section = str(_result(verdicts)).split("\nCould not execute\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section == [
        "  3 bundles: bundle_unreadable: invalid_json: <bundle>/events.jsonl line 3 is not JSON; "
        "run `stepfork validate <bundle>`",
        "    runs/shard-0/run-0000.sftrace",
        "    runs/shard-1/run-0001.sftrace",
        "    runs/shard-2/run-0002.sftrace",
    ]
    # a group of one keeps its bundle's own message
    assert f"  {verdicts[0].bundle}: bundle_unreadable: {verdicts[0].detail}" in str(_result(verdicts[:1]))
