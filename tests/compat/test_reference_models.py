"""Reference behaviour of the trace models, storage and JSON helpers (REFERENCE-API.md ``stepfork.trace``;
issue 14): hand-built traces and events, ``Trace.save``'s signature, the reference's helper names."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from stepfork.trace import (
    EnvironmentInfo,
    ErrorEvent,
    Event,
    EventStatus,
    FailureInfo,
    LLMRequest,
    LLMResponse,
    ReplayPolicy,
    RunEnd,
    RunStart,
    RunStatus,
    ToolCall,
    ToolResult,
    Trace,
    TraceSerializationError,
    TraceStorageError,
    build_manifest,
    canonical_json_bytes,
    hash_event_payloads,
    hash_json,
    load_trace,
    save_trace,
    to_json_value,
)

HEX_ID = re.compile(r"(run|evt)_[0-9a-f]{32}")


def test_a_trace_built_by_hand_gets_a_run_id() -> None:
    trace = Trace(agent_name="a")
    assert HEX_ID.fullmatch(trace.run_id)
    assert trace.run_id.startswith("run_")
    assert Trace(agent_name="a").run_id != trace.run_id


def test_an_event_built_by_hand_gets_ids() -> None:
    call = ToolCall(name="s", input={})
    assert call.id.startswith("evt_")
    assert HEX_ID.fullmatch(call.id)
    assert call.run_id.startswith("run_")


def test_events_built_inside_a_trace_take_its_run_id() -> None:
    trace = Trace(agent_name="a", events=[RunStart(), ToolCall(name="s", input={"q": 1})])
    assert {e.run_id for e in trace.events} == {trace.run_id}


def test_an_explicit_event_run_id_is_kept() -> None:
    trace = Trace(agent_name="a", events=[ToolCall(name="s", input={}, run_id="run_other")])
    assert trace.events[0].run_id == "run_other"


def test_add_returns_a_copy_with_the_run_id_and_step() -> None:
    trace = Trace(agent_name="a")
    trace.add(RunStart())
    stored = trace.add(ToolCall(name="s", input={}))
    assert (stored.run_id, stored.step) == (trace.run_id, 1)
    assert (trace.totals.events, trace.totals.tool_calls) == (2, 1)


def test_models_reject_unknown_fields_and_naive_timestamps() -> None:
    with pytest.raises(ValidationError):
        ToolCall(name="s", input={}, extra=1)
    with pytest.raises(ValidationError):
        ToolCall(name="s", input={}, timestamp=datetime(2026, 1, 1))
    with pytest.raises(ValidationError):
        ToolCall(name="", input={})
    with pytest.raises(ValidationError):
        LLMResponse(output=None, prompt_tokens=-1)


def test_event_defaults_of_the_reference() -> None:
    event = ToolCall(name="s", input={})
    assert (event.parent_id, event.step, event.status, event.replay_policy) == (None, 0, "ok", "frozen")
    assert event.redactions == []
    assert ErrorEvent(error_type="E", message="m").status == EventStatus.ERROR
    assert LLMRequest(model="m", input=None).provider is None
    assert event.timestamp.tzinfo is not None


def test_the_event_union_is_discriminated_on_type() -> None:
    adapter = TypeAdapter(Event)
    data = {"type": "tool_result", "name": "s", "output": 1, "id": "e", "run_id": "r"}
    event = adapter.validate_python(data)
    assert isinstance(event, ToolResult)
    assert isinstance(adapter.validate_json(RunEnd(run_status="completed").model_dump_json()), RunEnd)


@pytest.mark.parametrize(
    ("enum", "members"),
    [
        (EventStatus, ["OK", "ERROR", "SKIPPED"]),
        (ReplayPolicy, ["FROZEN", "LIVE", "MANUAL", "FORBIDDEN", "DERIVED"]),
        (RunStatus, ["RUNNING", "COMPLETED", "FAILED"]),
    ],
)
def test_enums_are_strenums_valued_by_the_lower_case_name(enum: type, members: list[str]) -> None:
    assert [m.name for m in enum] == members
    assert all(m.value == m.name.lower() for m in enum)


def test_model_copy_and_validate_round_trip() -> None:
    call = ToolCall(name="s", input={"a": 1})
    assert call.model_copy(update={"name": "t"}).name == "t"
    assert ToolCall.model_validate(call.model_dump()) == call


def test_trace_save_takes_status_failure_and_environment(tmp_path: Path) -> None:
    trace = Trace(agent_name="a", events=[RunStart(), ErrorEvent(error_type="E", message="boom")])
    failure = FailureInfo(type="E", message="boom", step=1)
    env = EnvironmentInfo(python="3.12", os="linux", stepfork_version="x")
    path = trace.save(tmp_path / "t.sftrace", status="failed", failure=failure, environment=env)
    loaded = Trace.load(path)
    assert (loaded.status, loaded.failure, loaded.environment) == (RunStatus.FAILED, failure, env)
    assert trace.status == RunStatus.RUNNING  # the trace in memory is not changed


def test_save_trace_takes_the_same_keywords_and_refuses_existing_bundles(tmp_path: Path) -> None:
    trace = Trace(agent_name="a", events=[RunStart()])
    path = save_trace(trace, tmp_path / "t.sftrace", status=RunStatus.COMPLETED)
    assert load_trace(path).status == RunStatus.COMPLETED
    with pytest.raises(TraceStorageError, match="already exists"):
        save_trace(trace, path)
    with pytest.raises(TraceStorageError, match="sftrace"):
        save_trace(trace, tmp_path / "t.txt")


def test_a_failed_status_needs_a_failure(tmp_path: Path) -> None:
    with pytest.raises(TraceStorageError):
        Trace(agent_name="a").save(tmp_path / "t.sftrace", status="failed")


def test_build_manifest_applies_the_overrides_and_recounts() -> None:
    trace = Trace(agent_name="a", events=[RunStart(), ToolCall(name="s", input={})])
    manifest = build_manifest(trace, status="completed")
    assert (manifest.status, manifest.totals.events, manifest.totals.tool_calls) == ("completed", 2, 1)
    assert (manifest.format, manifest.schema_version, manifest.run_id) == ("stepfork", "0.1", trace.run_id)


def test_canonical_json_bytes_and_hash_json() -> None:
    assert canonical_json_bytes({"b": 1, "a": [1.5, "é"]}) == '{"a":[1.5,"é"],"b":1}'.encode()
    assert hash_json({"a": 1}) == "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    with pytest.raises(TypeError):
        canonical_json_bytes(float("nan"))


def test_hash_event_payloads_returns_a_hashed_copy() -> None:
    call = ToolCall(name="s", input={"a": 1})
    hashed = hash_event_payloads(call)
    assert hashed.input_hash == hash_json({"a": 1})
    assert hashed.output_hash is None
    assert call.input_hash is None


def test_to_json_value_uses_the_serializer_for_values_without_a_json_form() -> None:
    class Money:
        def __init__(self, cents: int) -> None:
            self.cents = cents

    converted = to_json_value({"price": Money(5)}, serializer=lambda m: {"cents": m.cents})
    assert converted == {"price": {"cents": 5}}
    with pytest.raises(TraceSerializationError, match="unchanged"):
        to_json_value(Money(5), serializer=lambda m: m)
    with pytest.raises(TraceSerializationError):
        to_json_value(Money(5))
    assert isinstance(TraceSerializationError("x"), TypeError)


def test_created_at_is_timezone_aware() -> None:
    assert Trace(agent_name="a").created_at.tzinfo is not None
    assert Trace(agent_name="a", created_at=datetime(2026, 1, 1, tzinfo=UTC)).created_at.year == 2026


def test_manifest_failure_must_match_the_status() -> None:
    from stepfork.trace import TraceManifest

    with pytest.raises(ValidationError):
        TraceManifest(run_id="r", agent_name="a", created_at=datetime.now(UTC), status="failed")
    manifest = TraceManifest(run_id="r", agent_name="a", created_at=datetime.now(UTC))
    assert (manifest.format, manifest.schema_version, manifest.status) == ("stepfork", "0.1", "running")


def test_validation_and_integrity_results(tmp_path: Path) -> None:
    from stepfork.trace import IntegrityStatus, validate_bundle, validate_trace, verify_bundle_integrity

    trace = Trace(agent_name="a")
    start = trace.add(RunStart())
    trace.add(RunEnd(run_status="completed", parent_id=start.id))
    result = validate_trace(trace, strict=False)
    assert result.valid == (not result.issues)
    dup = Trace(agent_name="a", events=[RunStart(id="evt_1"), RunEnd(id="evt_1", run_status="completed")])
    assert "duplicate_event_id" in {i.code for i in validate_trace(dup).issues}
    path = trace.save(tmp_path / "t.sftrace", status="completed")
    assert validate_bundle(path, verify_integrity=True).valid
    assert verify_bundle_integrity(path).status == IntegrityStatus.VERIFIED
    (path / "integrity.json").unlink()
    assert verify_bundle_integrity(path).status == IntegrityStatus.UNVERIFIED_LEGACY


def test_redact_json_findings_have_a_pointer_and_a_reason() -> None:
    from stepfork.trace import REDACTION_REPLACEMENT, redact_json

    result = redact_json({"api_key": "abc123456", "note": "key AKIAIOSFODNN7EXAMPLE"})
    assert result.value["api_key"] == REDACTION_REPLACEMENT == "[REDACTED]"
    assert {(f.path, f.reason) for f in result.findings} == {
        ("/api_key", "sensitive_key"),
        ("/note", "credential_pattern"),
    }


def test_schema_functions_return_dicts() -> None:
    from stepfork.trace import event_json_schema, manifest_json_schema, trace_json_schema

    for schema in (event_json_schema(), manifest_json_schema(), trace_json_schema()):
        assert isinstance(schema, dict)
    assert "id" in event_json_schema()["oneOf"][0].get("required", []) or "$defs" in event_json_schema()
