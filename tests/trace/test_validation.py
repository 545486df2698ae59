"""validate_trace / validate_bundle: every issue code, strict and partial modes (notes 4, notes 9 item 5)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stepfork.trace.bundle import Trace, save_trace
from stepfork.trace.models import (
    ErrorEvent,
    FailureInfo,
    IntegrityStatus,
    LLMRequest,
    LLMResponse,
    RunEnd,
    RunStart,
    RunStatus,
    ToolCall,
    ToolResult,
)
from stepfork.trace.validation import validate_bundle, validate_trace

T0 = datetime(2026, 10, 8, 10, 0, tzinfo=UTC)
ALL_CHECKS = [
    "Manifest structure valid",
    "Event payloads parse",
    "Run IDs consistent",
    "Event count matches",
    "Strict execution checks",
    "Integrity verified",
]


def good() -> Trace:
    """A completed run with recorder-style parents: two calls of one tool, one LLM call."""
    trace = Trace(run_id="r", agent_name="a", created_at=T0, status=RunStatus.COMPLETED)
    trace.add(RunStart(id="s", run_id="r", timestamp=T0))
    trace.add(ToolCall(id="c1", run_id="r", parent_id="s", timestamp=T0, name="t", input=1))
    trace.add(ToolCall(id="c2", run_id="r", parent_id="s", timestamp=T0, name="t", input=2))
    trace.add(ToolResult(id="o2", run_id="r", parent_id="c2", timestamp=T0, name="t", output=2))
    trace.add(ToolResult(id="o1", run_id="r", parent_id="c1", timestamp=T0, name="t", output=1))
    trace.add(LLMRequest(id="q", run_id="r", parent_id="s", timestamp=T0, model="m", input=None))
    trace.add(LLMResponse(id="a", run_id="r", parent_id="q", timestamp=T0, model="m", output="hi"))
    trace.add(RunEnd(id="z", run_id="r", parent_id="s", timestamp=T0, run_status=RunStatus.COMPLETED))
    return trace


def failed() -> Trace:
    trace = Trace(
        run_id="r",
        agent_name="a",
        created_at=T0,
        status=RunStatus.FAILED,
        failure=FailureInfo(type="E", message="m", step=3),
    )
    trace.add(RunStart(id="s", run_id="r", timestamp=T0))
    trace.add(LLMRequest(id="q", run_id="r", parent_id="s", timestamp=T0, model="m", input=None))
    trace.add(ErrorEvent(id="e1", run_id="r", parent_id="q", timestamp=T0, error_type="E", message="m"))
    trace.add(ErrorEvent(id="e2", run_id="r", parent_id="s", timestamp=T0, error_type="E", message="m"))
    trace.add(RunEnd(id="z", run_id="r", parent_id="s", timestamp=T0, run_status=RunStatus.FAILED))
    return trace


def codes(trace: Trace, *, strict: bool = True) -> list[str]:
    return validate_trace(trace, strict=strict).codes


def test_a_well_formed_completed_run_and_a_failed_run_are_valid_in_both_modes() -> None:
    for trace in (good(), failed()):
        for strict in (True, False):
            result = validate_trace(trace, strict=strict, verify_payload_hashes=False)
            assert result.valid, result.issues


def test_checks_are_listed_in_cli_order_and_only_when_they_ran(tmp_path: Path) -> None:
    path = save_trace(good(), tmp_path / "g.sftrace")
    result = validate_bundle(path, verify_integrity=True)
    assert [(c.name, c.passed) for c in result.checks] == [(name, True) for name in ALL_CHECKS]
    partial = validate_bundle(path, strict=False)
    assert [c.name for c in partial.checks] == ALL_CHECKS[:4]


def edit(mutate: Callable[[Trace], None], base: Callable[[], Trace] = good) -> Trace:
    trace = base()
    mutate(trace)
    return trace


STRUCTURAL: list[tuple[str, Callable[[Trace], None]]] = [
    ("event_count_mismatch", lambda t: setattr(t, "totals", t.totals.model_copy(update={"events": 3}))),
    ("totals_mismatch", lambda t: setattr(t, "totals", t.totals.model_copy(update={"tool_calls": 9}))),
    ("duplicate_event_id", lambda t: setattr(t.events[2], "id", "c1")),
    ("run_id_mismatch", lambda t: setattr(t.events[1], "run_id", "other")),
    ("invalid_parent", lambda t: setattr(t.events[1], "parent_id", "nope")),
    ("parent_not_earlier", lambda t: setattr(t.events[1], "parent_id", "z")),
]


@pytest.mark.parametrize(("code", "mutate"), STRUCTURAL, ids=[c for c, _ in STRUCTURAL])
def test_structural_codes_apply_in_both_modes(code: str, mutate: Callable[[Trace], None]) -> None:
    trace = edit(mutate)
    assert code in codes(trace, strict=True)
    assert code in codes(trace, strict=False)


def test_a_decreasing_step_is_step_order_in_both_modes_and_step_mismatch_in_strict() -> None:
    trace = edit(lambda t: setattr(t.events[3], "step", 1))
    assert codes(trace, strict=False) == ["step_order"]
    assert codes(trace) == ["step_order", "step_mismatch"]
    gap = edit(lambda t: [setattr(e, "step", e.step * 2) for e in t.events])
    assert codes(gap, strict=False) == []
    assert set(codes(gap)) == {"step_mismatch"}


def test_issues_carry_the_event_id_and_step() -> None:
    issue = validate_trace(edit(lambda t: setattr(t.events[1], "parent_id", "nope"))).issues[0]
    assert (issue.code, issue.event_id, issue.step) == ("invalid_parent", "c1", 1)


STRICT: list[tuple[str, Callable[[], Trace]]] = [
    ("run_start_count", lambda: edit(lambda t: t.events.insert(1, RunStart(id="s2", run_id="r", step=1)))),
    ("run_start_count", lambda: edit(lambda t: t.events.pop(0) and None)),
    ("missing_error_event", lambda: edit(lambda t: t.events.pop(3) and t.events.pop(2) and None, failed)),
    (
        "failure_step",
        lambda: edit(lambda t: setattr(t, "failure", FailureInfo(type="E", message="m", step=0)), failed),
    ),
    ("run_end_position", lambda: edit(lambda t: t.events.insert(2, t.events[-1]))),
    ("run_end_position", lambda: edit(lambda t: t.events.pop() and None)),
    ("status_mismatch", lambda: edit(lambda t: setattr(t.events[-1], "run_status", RunStatus.FAILED))),
    ("unpaired_call", lambda: edit(lambda t: t.events.pop(4) and None)),
    (
        "unpaired_result",
        lambda: edit(
            lambda t: t.events.insert(1, ToolResult(id="x", run_id="r", step=1, name="u", output=None))
        ),
    ),
    (
        "unpaired_result",
        lambda: edit(lambda t: t.events.insert(6, LLMResponse(id="x", run_id="r", step=6, output=None))),
    ),
]


@pytest.mark.parametrize(("code", "build"), STRICT, ids=[f"{c}-{i}" for i, (c, _) in enumerate(STRICT)])
def test_strict_codes_apply_only_in_strict_mode(code: str, build: Callable[[], Trace]) -> None:
    trace = build()
    assert code in codes(trace)
    assert not set(codes(trace, strict=False)) & {code, "step_mismatch"}
    strict = validate_trace(trace)
    assert [c.passed for c in strict.checks if c.name == "Strict execution checks"] == [False]


def test_a_result_pairs_with_the_nearest_open_call_of_its_name_when_parents_chain() -> None:
    # the reference's golden fixtures chain each event to the previous one
    trace = Trace(run_id="r", agent_name="a", created_at=T0, status=RunStatus.COMPLETED)
    trace.add(RunStart(id="s", run_id="r", timestamp=T0))
    trace.add(LLMRequest(id="q", run_id="r", parent_id="s", timestamp=T0, model="m", input=None))
    trace.add(LLMResponse(id="a", run_id="r", parent_id="q", timestamp=T0, model="m", output=None))
    trace.add(ToolCall(id="c", run_id="r", parent_id="a", timestamp=T0, name="t", input=None))
    trace.add(ToolResult(id="o", run_id="r", parent_id="c", timestamp=T0, name="t", output=None))
    trace.add(RunEnd(id="z", run_id="r", parent_id="o", timestamp=T0, run_status=RunStatus.COMPLETED))
    assert codes(trace) == []
    wrong_name = edit(lambda t: setattr(t.events[4], "name", "other"), lambda: trace)
    assert codes(wrong_name) == ["unpaired_result", "unpaired_call"]


def test_open_calls_of_a_run_without_run_end_are_not_unpaired() -> None:
    def cut(t: Trace) -> None:
        del t.events[-2:]  # run_end and the LLM response: killed during the LLM call
        t.status = RunStatus.RUNNING

    trace = edit(cut)
    trace.totals = trace.totals.model_copy(update={"events": len(trace.events)})
    assert codes(trace) == []  # the LLM request is still open: the recorder was killed during the call
    trace.status = RunStatus.COMPLETED
    assert codes(trace) == ["run_end_position", "unpaired_call"]


def test_a_running_manifest_beside_a_terminal_run_end_is_a_warning_not_an_issue() -> None:
    trace = edit(lambda t: setattr(t, "status", RunStatus.RUNNING))
    for strict in (True, False):
        result = validate_trace(trace, strict=strict)
        assert result.valid
        assert [w.code for w in result.warnings] == ["status_mismatch"]


def test_partial_mode_ignores_totals_of_a_running_manifest_only() -> None:
    def kill(t: Trace) -> None:
        del t.events[-1]
        t.status = RunStatus.RUNNING

    killed = edit(kill)
    killed.totals = killed.totals.model_copy(update={"events": 0, "llm_calls": 0, "tool_calls": 0})
    assert codes(killed, strict=False) == []
    assert codes(killed) == ["event_count_mismatch", "totals_mismatch", "totals_mismatch"]
    done = edit(lambda t: setattr(t, "totals", t.totals.model_copy(update={"events": 0})))
    assert codes(done, strict=False) == ["event_count_mismatch"]


def test_an_inconsistent_in_memory_manifest_is_invalid_manifest() -> None:
    trace = edit(lambda t: setattr(t, "failure", FailureInfo(type="E", message="m", step=0)))
    result = validate_trace(trace, strict=False)
    assert result.codes == ["invalid_manifest"]
    assert result.checks[0].passed is False


def test_payload_hashes_null_is_integrity_unverified_and_wrong_is_payload_hash_mismatch() -> None:
    trace = good()
    for event in trace.events:
        event.input_hash = event.output_hash = None
    assert codes(trace) == []
    result = validate_trace(trace, verify_payload_hashes=True)
    assert set(result.codes) == {"integrity_unverified"}
    assert result.issues[0].location == "events.jsonl:input_hash"
    assert len(result.issues) == len(trace.events)  # each type hashes exactly one field here


def test_a_tampered_payload_is_payload_hash_mismatch_in_an_intact_looking_bundle(tmp_path: Path) -> None:
    path = save_trace(good(), tmp_path / "g.sftrace")
    data = (path / "events.jsonl").read_bytes().replace(b'"output":2', b'"output":3')
    (path / "events.jsonl").write_bytes(data)
    result = validate_bundle(path, verify_integrity=True)
    assert result.integrity == IntegrityStatus.MISMATCH
    assert result.codes == ["payload_hash_mismatch", "integrity_mismatch"]
    assert not result.unreadable
    assert not result.legacy
    assert validate_bundle(path).valid  # hashes are only checked with verify_integrity


def test_a_legacy_bundle_is_flagged_legacy_only_when_integrity_is_requested(tmp_path: Path) -> None:
    path = save_trace(good(), tmp_path / "g.sftrace")
    (path / "integrity.json").unlink()
    assert validate_bundle(path).valid
    assert not validate_bundle(path).legacy
    result = validate_bundle(path, verify_integrity=True)
    assert result.legacy
    assert result.codes == ["integrity_unverified"]
    assert [i.location for i in result.issues] == ["integrity.json"]


def test_legacy_is_known_even_when_the_bundle_is_unreadable(tmp_path: Path) -> None:
    path = save_trace(good(), tmp_path / "g.sftrace")
    (path / "integrity.json").unlink()
    (path / "manifest.json").write_bytes(b"[")
    result = validate_bundle(path, verify_integrity=True)
    assert result.legacy
    assert result.unreadable


def test_unsupported_integrity_algorithm_makes_the_bundle_unreadable(tmp_path: Path) -> None:
    path = save_trace(good(), tmp_path / "g.sftrace")
    text = (path / "integrity.json").read_text().replace('"sha256"', '"sha1"')
    (path / "integrity.json").write_text(text)
    result = validate_bundle(path, verify_integrity=True)
    assert result.codes == ["integrity_algorithm_unsupported"]
    assert result.unreadable


def test_to_dict_is_json_ready() -> None:
    data = validate_trace(edit(lambda t: setattr(t.events[1], "parent_id", "nope"))).to_dict()
    assert data["valid"] is False
    assert data["issues"][0]["code"] == "invalid_parent"
    assert data["integrity"] is None
    assert data["checks"][2] == {"name": "Run IDs consistent", "passed": False}


def test_a_file_given_as_the_bundle_is_named_as_such_not_as_missing(tmp_path: Path) -> None:
    from stepfork.trace import validate_bundle

    afile = tmp_path / "afile.sftrace"
    afile.write_text("hi")
    result = validate_bundle(afile)
    assert result.unreadable
    assert [issue.code for issue in result.issues] == ["missing_file"]
    assert "exists but is not a .sftrace directory" in result.issues[0].message
    gone = validate_bundle(tmp_path / "gone.sftrace")
    assert gone.issues[0].message.startswith("bundle not found")
