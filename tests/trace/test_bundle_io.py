"""Saving and loading bundles: the bytes of each file, redaction and hashes at save, atomic replace."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stepfork.trace.bundle import Trace, load_trace, save_trace, serialize_event
from stepfork.trace.canonical import compact_json, fingerprint
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.integrity import verify_bundle_integrity
from stepfork.trace.models import (
    ErrorEvent,
    FailureInfo,
    IntegrityStatus,
    LLMRequest,
    LLMResponse,
    RunEnd,
    RunStart,
    RunStatus,
    StateChange,
    ToolCall,
    ToolResult,
)
from stepfork.trace.redaction import Redactor
from stepfork.trace.validation import validate_bundle

T0 = datetime(2026, 10, 8, 10, 0, tzinfo=UTC)
EMPTY_REDACTIONS = b'{\n  "schema_version": "0.1",\n  "entries": []\n}\n'


def make_trace(output: object = None, *, run_id: str = "run_1") -> Trace:
    """A completed run: run_start, llm request/response, tool call/result, run_end, all parented."""
    trace = Trace(run_id=run_id, agent_name="agent", created_at=T0, status=RunStatus.COMPLETED)
    start = trace.add(RunStart(id="e0", run_id="x", timestamp=T0, input={"q": "hi"}))
    req = trace.add(
        LLMRequest(id="e1", run_id="x", parent_id=start.id, timestamp=T0, model="m", input={"b": 1, "a": 2})
    )
    trace.add(
        LLMResponse(id="e2", run_id="x", parent_id=req.id, timestamp=T0, model="m", output={"text": "ok"})
    )
    call = trace.add(
        ToolCall(id="e3", run_id="x", parent_id=start.id, timestamp=T0, name="t", input={"x": 1})
    )
    trace.add(ToolResult(id="e4", run_id="x", parent_id=call.id, timestamp=T0, name="t", output=output))
    trace.add(RunEnd(id="e5", run_id="x", parent_id=start.id, timestamp=T0, run_status=RunStatus.COMPLETED))
    return trace


def test_add_sets_run_id_step_and_counts_without_changing_the_callers_event() -> None:
    trace = Trace(run_id="run_a", agent_name="agent", created_at=T0)
    event = ToolCall(id="c", run_id="other", step=7, name="t", input=None)
    stored = trace.add(event)
    assert (stored.run_id, stored.step) == ("run_a", 0)
    assert (event.run_id, event.step) == ("other", 7)
    trace.add(LLMRequest(id="r", run_id="other", model="m", input=None))
    assert (trace.totals.events, trace.totals.tool_calls, trace.totals.llm_calls) == (2, 1, 1)
    assert [e.step for e in trace.events] == [0, 1]


def test_saved_bundle_round_trips_every_field(tmp_path: Path) -> None:
    trace = make_trace({"big": 2**70, "small": 1e-05, "neg": -0.0, "text": "naïve ✓"})
    loaded = load_trace(save_trace(trace, tmp_path / "run.sftrace"))
    assert loaded.manifest == trace.manifest
    assert [e.model_dump(exclude={"input_hash", "output_hash"}) for e in loaded.events] == [
        e.model_dump(exclude={"input_hash", "output_hash"}) for e in trace.events
    ]
    output = loaded.events[4].output  # type: ignore[union-attr]
    assert output["big"] == 2**70
    assert type(output["big"]) is int
    assert output["small"] == 1e-05
    assert str(output["neg"]) == "-0.0"


def test_manifest_is_pretty_in_model_key_order_with_raw_unicode(tmp_path: Path) -> None:
    trace = make_trace()
    trace.agent_name = "agent ✓"
    path = save_trace(trace, tmp_path / "run.sftrace")
    text = (path / "manifest.json").read_bytes()
    assert text.endswith(b"}\n")
    assert "agent ✓".encode() in text
    keys = list(json.loads(text))
    assert keys == [
        "format",
        "schema_version",
        "run_id",
        "agent_name",
        "created_at",
        "status",
        "failure",
        "environment",
        "totals",
    ]
    assert b'\n  "created_at": "2026-10-08T10:00:00Z",\n' in text
    assert (path / "redactions.json").read_bytes() == EMPTY_REDACTIONS


def test_event_lines_are_compact_common_fields_first_payload_keys_in_recorded_order(tmp_path: Path) -> None:
    path = save_trace(make_trace(), tmp_path / "run.sftrace")
    lines = (path / "events.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert len(lines) == 7
    request = lines[1]
    assert request.startswith(
        b'{"id":"e1","run_id":"run_1","parent_id":"e0","step":1,"type":"llm_request",'
        b'"timestamp":"2026-10-08T10:00:00Z","duration_ms":null,"status":"ok",'
        b'"replay_policy":"frozen","input_hash":"'
    )
    assert request.endswith(b'"redactions":[],"provider":null,"model":"m","input":{"b":1,"a":2}}')
    assert load_trace(path).events[1].input_hash == fingerprint({"a": 2, "b": 1})  # hash: sorted bytes


def test_save_recomputes_hashes_of_the_stored_payloads_including_null(tmp_path: Path) -> None:
    trace = make_trace(output=None)
    trace.events[0].input_hash = "0" * 64  # a stale hash must not survive
    loaded = load_trace(save_trace(trace, tmp_path / "run.sftrace"))
    start, _, response, _, result, end = loaded.events
    assert start.input_hash == fingerprint({"q": "hi"})
    assert start.output_hash is None
    assert response.input_hash is None
    assert response.output_hash == fingerprint({"text": "ok"})
    assert result.output_hash == fingerprint(None)
    assert end.output_hash == fingerprint(None)
    assert validate_bundle(tmp_path / "run.sftrace", verify_integrity=True).valid


def test_state_change_and_error_hash_their_own_fields(tmp_path: Path) -> None:
    trace = Trace(
        run_id="r",
        agent_name="a",
        created_at=T0,
        status=RunStatus.FAILED,
        failure=FailureInfo(type="E", message="boom", step=2),
    )
    trace.add(RunStart(id="s", run_id="r", timestamp=T0))
    trace.add(StateChange(id="c", run_id="r", parent_id="s", timestamp=T0, key="k", before=[1], after=[2]))
    trace.add(
        ErrorEvent(
            id="e", run_id="r", parent_id="s", timestamp=T0, error_type="E", message="boom", details={"n": 1}
        )
    )
    trace.add(RunEnd(id="z", run_id="r", parent_id="s", timestamp=T0, run_status=RunStatus.FAILED))
    loaded = load_trace(save_trace(trace, tmp_path / "f.sftrace"))
    change, error = loaded.events[1], loaded.events[2]
    assert (change.input_hash, change.output_hash) == (fingerprint([1]), fingerprint([2]))
    assert (error.input_hash, error.output_hash) == (None, fingerprint({"n": 1}))
    assert validate_bundle(tmp_path / "f.sftrace", verify_integrity=True).valid


def test_save_redacts_secrets_records_paths_and_entries_and_leaves_the_trace_unchanged(
    tmp_path: Path,
) -> None:
    trace = make_trace()
    trace.events[3].input = {"api_key": "hunter2-secret-value", "q": "x"}  # type: ignore[union-attr]
    before = trace.model_dump()
    path = save_trace(trace, tmp_path / "run.sftrace")
    assert trace.model_dump() == before
    raw = (path / "events.jsonl").read_bytes() + (path / "redactions.json").read_bytes()
    assert b"hunter2-secret-value" not in raw
    loaded = load_trace(path)
    assert loaded.events[3].input == {"api_key": "[REDACTED]", "q": "x"}  # type: ignore[union-attr]
    assert loaded.events[3].redactions == ["/input/api_key"]
    assert loaded.events[3].input_hash == fingerprint({"api_key": "[REDACTED]", "q": "x"})
    entries = [(e.event_id, e.path, e.reason) for e in loaded.redactions]
    assert entries == [("e3", "/input/api_key", "sensitive_key")]
    # saving the loaded trace again keeps the entries once and the paths once
    again = load_trace(save_trace(loaded, tmp_path / "again.sftrace"))
    assert [(e.event_id, e.path) for e in again.redactions] == [("e3", "/input/api_key")]
    assert again.events[3].redactions == ["/input/api_key"]


def test_save_recomputes_totals_from_the_events(tmp_path: Path) -> None:
    trace = make_trace()
    trace.totals = trace.totals.model_copy(
        update={"events": 99, "llm_calls": 0, "tool_calls": 5, "duration_ms": 12}
    )
    manifest = load_trace(save_trace(trace, tmp_path / "run.sftrace")).totals
    assert (manifest.events, manifest.llm_calls, manifest.tool_calls, manifest.duration_ms) == (6, 1, 1, 12)


def test_save_writes_integrity_that_verifies(tmp_path: Path) -> None:
    path = save_trace(make_trace(), tmp_path / "run.sftrace")
    result = verify_bundle_integrity(path)
    assert result.status == IntegrityStatus.VERIFIED
    assert sorted(result.verified_files) == ["events.jsonl", "manifest.json", "redactions.json"]


def test_save_refuses_a_path_without_the_sftrace_suffix(tmp_path: Path) -> None:
    with pytest.raises(TraceStorageError) as info:
        save_trace(make_trace(), tmp_path / "run.trace")
    assert info.value.code == "invalid_path"
    assert not (tmp_path / "run.trace").exists()


def test_save_refuses_an_existing_bundle_unless_overwrite(tmp_path: Path) -> None:
    target = save_trace(make_trace(run_id="first"), tmp_path / "run.sftrace")
    with pytest.raises(TraceStorageError) as info:
        save_trace(make_trace(run_id="second"), target)
    assert info.value.code == "already_exists"
    assert load_trace(target).run_id == "first"
    save_trace(make_trace(run_id="second"), target, overwrite=True)
    assert load_trace(target).run_id == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sftrace"]  # no temp dirs left behind


def test_save_into_an_existing_empty_directory_needs_no_overwrite(tmp_path: Path) -> None:
    (tmp_path / "run.sftrace").mkdir()
    assert load_trace(save_trace(make_trace(), tmp_path / "run.sftrace")).run_id == "run_1"


def test_a_failing_save_leaves_the_previous_bundle_and_no_temp_dir(tmp_path: Path) -> None:
    target = save_trace(make_trace(run_id="first"), tmp_path / "run.sftrace")
    bad = make_trace(run_id="second")
    bad.events[4].output = {"nan": float("nan")}  # type: ignore[union-attr]
    with pytest.raises(TypeError):  # CanonicalJsonError is a TypeError
        save_trace(bad, target, overwrite=True)
    assert load_trace(target).run_id == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sftrace"]


def test_save_of_a_failed_run_without_failure_is_an_invalid_manifest(tmp_path: Path) -> None:
    trace = make_trace()
    trace.status = RunStatus.FAILED
    with pytest.raises(TraceStorageError) as info:
        save_trace(trace, tmp_path / "run.sftrace")
    assert info.value.code == "invalid_manifest"


def test_trace_methods_delegate_to_the_functions(tmp_path: Path) -> None:
    path = make_trace().save(tmp_path / "run.sftrace")
    assert Trace.load(path).manifest == make_trace().manifest


def test_a_six_megabyte_payload_round_trips_whole(tmp_path: Path) -> None:
    blob = "iVBORw0KGgo" * (6 * 1024 * 1024 // 11)
    loaded = load_trace(save_trace(make_trace({"png": blob}), tmp_path / "big.sftrace"))
    assert loaded.events[4].output == {"png": blob}  # type: ignore[union-attr]
    assert loaded.events[4].output_hash == fingerprint({"png": blob})


def test_ten_thousand_events_load_in_order(tmp_path: Path) -> None:
    trace = Trace(run_id="r", agent_name="a", created_at=T0)
    trace.add(RunStart(id="s", run_id="r", timestamp=T0))
    for i in range(5000):
        call = trace.add(
            ToolCall(id=f"c{i}", run_id="r", parent_id="s", timestamp=T0, name="t", input={"i": i})
        )
        trace.add(ToolResult(id=f"r{i}", run_id="r", parent_id=call.id, timestamp=T0, name="t", output=i))
    loaded = load_trace(save_trace(trace, tmp_path / "many.sftrace"))
    assert len(loaded.events) == 10001
    assert [e.step for e in loaded.events] == list(range(10001))


def test_serialize_event_is_one_line_equal_to_the_saved_line_of_a_clean_event(tmp_path: Path) -> None:
    trace = make_trace({"z": 1, "a": [1, 2]})
    path = save_trace(trace, tmp_path / "run.sftrace")
    saved = load_trace(path)
    lines = (path / "events.jsonl").read_bytes().splitlines(keepends=True)
    assert [serialize_event(e) for e in saved.events] == lines
    assert serialize_event(saved.events[4]).endswith(
        b'"output":' + compact_json({"z": 1, "a": [1, 2]}) + b"}\n"
    )


def test_save_applies_a_custom_redactor_to_events_and_manifest(tmp_path: Path) -> None:
    trace = make_trace({"tenant": "acme-internal"})
    trace.agent_name = "agent for acme-internal"
    path = trace.save(tmp_path / "run.sftrace", redactor=Redactor(secrets=["acme-internal"]))
    raw = b"".join(
        (path / name).read_bytes() for name in ("manifest.json", "events.jsonl", "redactions.json")
    )
    assert b"acme-internal" not in raw
    events = {e.event_id for e in load_trace(path).redactions}
    assert events == {"e4", "__manifest__"}
