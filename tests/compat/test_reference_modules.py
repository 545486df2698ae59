"""Programs written against the earlier implementation run unchanged (issue 14): module paths and names.

Written from interop/REFERENCE-API.md sections 1 and 2, one test per documented name or behaviour. Where
Stepfork deliberately differs, docs/decisions.md says so and the test asserts Stepfork's documented answer.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

import stepfork

REFERENCE_ALL = [
    "FailureInfo", "RecordedDependencyError", "RecordingSession", "ReplayError", "ReplayExhaustedError",
    "ReplayMismatchError", "ReplayPolicyError", "ReplaySession", "ToolCall", "Trace", "__version__",
    "allm_request", "diff_traces", "llm_request", "record", "trace_tool",
]  # fmt: skip


@pytest.mark.parametrize("name", REFERENCE_ALL)
def test_the_package_exports_every_reference_name(name: str) -> None:
    assert name in stepfork.__all__
    assert getattr(stepfork, name) is not None


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("record", "stepfork.trace"),
        ("RecordingSession", "stepfork.trace"),
        ("trace_tool", "stepfork.trace"),
        ("Trace", "stepfork.trace"),
        ("ToolCall", "stepfork.trace"),
        ("ReplaySession", "stepfork.replay"),
        ("RecordedDependencyError", "stepfork.replay"),
        ("diff_traces", "stepfork.diff"),
    ],
)
def test_package_names_are_the_subpackages_own_objects(name: str, module: str) -> None:
    assert getattr(stepfork, name) is getattr(importlib.import_module(module), name)


RECORDER_NAMES = [
    "record", "RecordingSession", "llm_request", "allm_request", "trace_tool", "LLMCallHandle",
    "active_recorder", "DEFAULT_TRACE_DIR",
]  # fmt: skip


@pytest.mark.parametrize("name", RECORDER_NAMES)
def test_stepfork_recorder_has_each_reference_name_as_the_trace_object(name: str) -> None:
    recorder = importlib.import_module("stepfork.recorder")
    if name == "LLMCallHandle":
        from stepfork.trace.callrecording import LLMCallHandle

        assert recorder.LLMCallHandle is LLMCallHandle
    else:
        assert getattr(recorder, name) is getattr(importlib.import_module("stepfork.trace"), name)


def test_default_trace_dir_is_the_reference_path() -> None:
    from stepfork.recorder import DEFAULT_TRACE_DIR

    assert Path(".stepfork") / "traces" == DEFAULT_TRACE_DIR


@pytest.mark.parametrize(
    "name",
    ["record", "RecordingSession", "trace_tool", "llm_request", "allm_request"],
)
def test_recording_entry_points_take_serializer(name: str) -> None:
    from stepfork import recorder

    assert "serializer" in inspect.signature(getattr(recorder, name)).parameters


REPLAY_NAMES = [
    "ReplaySession", "MatchedCall", "ExecutedCall", "ReplayDecision", "ReplaySummary", "RecordedCall",
    "extract_recorded_calls", "active_replay", "ReplayError", "ReplayMismatchError", "ReplayExhaustedError",
    "ReplayPolicyError", "RecordedDependencyError",
]  # fmt: skip


@pytest.mark.parametrize("name", REPLAY_NAMES)
def test_stepfork_replay_has_each_reference_name(name: str) -> None:
    assert hasattr(importlib.import_module("stepfork.replay"), name)


ASSERTION_NAMES = [
    "assert_tool_called", "assert_tool_not_called", "assert_tool_call_count", "assert_tool_arguments",
    "assert_tool_order", "assert_tool_sequence", "assert_max_steps", "assert_trajectory",
    "validate_trajectory_expectation",
]  # fmt: skip


@pytest.mark.parametrize("name", ASSERTION_NAMES)
def test_stepfork_assertions_has_each_reference_function(name: str) -> None:
    assertions = importlib.import_module("stepfork.assertions")
    assert inspect.signature(getattr(assertions, name)).parameters


TRACE_NAMES = [
    "EventStatus", "EventType", "ReplayPolicy", "RunStatus", "IntegrityStatus", "EventBase", "RunStart",
    "LLMRequest", "LLMResponse", "ToolCall", "ToolResult", "StateChange", "ErrorEvent", "RunEnd", "Event",
    "JsonValue", "Trace", "TraceManifest", "FailureInfo", "EnvironmentInfo", "TraceTotals", "save_trace",
    "load_trace", "build_manifest", "TraceStorageError", "validate_trace", "validate_bundle",
    "ValidationResult", "ValidationIssue", "verify_bundle_integrity", "IntegrityResult", "IntegrityIssue",
    "IntegrityRecord", "CANONICAL_JSON_PROFILE", "canonical_json_bytes", "hash_json", "hash_event_payloads",
    "to_json_value", "TraceSerializationError", "Serializer", "REDACTION_REPLACEMENT", "redact_json",
    "RedactionResult", "RedactionEntry", "RedactionManifest", "event_json_schema", "manifest_json_schema",
    "trace_json_schema",
]  # fmt: skip


@pytest.mark.parametrize("name", TRACE_NAMES)
def test_stepfork_trace_has_each_reference_name(name: str) -> None:
    import stepfork.trace as trace

    assert name in trace.__all__
    assert getattr(trace, name) is not None


def test_trace_aliases_are_the_same_objects_as_stepforks_names() -> None:
    import stepfork.trace as trace

    assert trace.hash_json is trace.fingerprint
    assert trace.canonical_json_bytes is trace.canonical_json


DIFF_NAMES = [
    "diff_traces", "extract_behavior", "BehaviorStep", "DiffResult", "StepDiff", "FieldChange",
    "TraceSummary", "ChangeKind", "values_equal", "first_difference", "collect_field_changes",
]  # fmt: skip


@pytest.mark.parametrize("name", DIFF_NAMES)
def test_stepfork_diff_has_each_reference_name(name: str) -> None:
    assert hasattr(importlib.import_module("stepfork.diff"), name)


EXPORT_NAMES = [
    "generate_pytest_source", "export_pytest_test", "run_regression_case", "resolve_entrypoint",
    "ExportError", "ExportExistsError", "EntrypointError",
]  # fmt: skip


@pytest.mark.parametrize("name", EXPORT_NAMES)
def test_stepfork_export_has_each_reference_name(name: str) -> None:
    assert hasattr(importlib.import_module("stepfork.export"), name)


def test_the_integrations_package_exports_nothing() -> None:
    assert importlib.import_module("stepfork.integrations").__all__ == []


def test_exception_hierarchy_matches_section_2() -> None:
    from stepfork.export import EntrypointError, ExportError, ExportExistsError
    from stepfork.integrations.openai import OpenAIIntegrationError
    from stepfork.replay import (
        RecordedDependencyError,
        ReplayError,
        ReplayExhaustedError,
        ReplayMismatchError,
        ReplayPolicyError,
    )
    from stepfork.trace import TraceSerializationError, TraceStorageError
    from stepfork.trace.errors import CanonicalJsonError

    assert issubclass(ReplayMismatchError, ReplayError)
    assert issubclass(ReplayExhaustedError, ReplayMismatchError)
    assert issubclass(ReplayPolicyError, ReplayError)
    assert issubclass(RecordedDependencyError, ReplayError)
    for cls in (TraceStorageError, ExportError, ExportExistsError, EntrypointError, OpenAIIntegrationError):
        assert issubclass(cls, ValueError), cls
    assert issubclass(ExportExistsError, ExportError)
    assert issubclass(TraceSerializationError, TypeError)
    assert issubclass(CanonicalJsonError, TypeError)


def test_recorded_dependency_error_keeps_its_keywords_and_sentence() -> None:
    from stepfork.replay import RecordedDependencyError

    error = RecordedDependencyError(kind="tool", name="search", error_type="ToolTimeout", message="slow")
    fields = (error.kind, error.name, error.error_type, error.message)
    assert fields == ("tool", "search", "ToolTimeout", "slow")
    assert str(error) == "recorded tool failure for 'search': ToolTimeout: slow"
