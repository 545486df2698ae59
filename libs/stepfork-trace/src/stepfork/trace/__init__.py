"""stepfork.trace: the light recorder that production services install (pydantic + orjson only).

Public names are imported lazily (PEP 562): decorating a function with ``trace_tool`` imports only the
boundary, not pydantic, and ``import stepfork.trace`` never imports replay, analysis, typer or rich.

Main entry points: :func:`record` / :class:`RecordingSession` (record a run into a ``.sftrace`` bundle),
:func:`record_main` (a recording script's ``COMMAND BUNDLE.sftrace [--overwrite]`` command line),
:func:`trace_tool`, :func:`llm_request`, :func:`allm_request` (instrumented boundaries), :class:`Trace`
(``Trace.load(path)``, ``trace.save(path)``), :func:`validate_bundle`, :func:`canonical_json` and
:func:`fingerprint` (schema 0.1 canonical bytes and their SHA-256).
"""

from __future__ import annotations

from stepfork.trace._version import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (`stepfork --version` reads us)

_EXPORTS: dict[str, str] = {
    # boundary
    "BoundaryCall": "stepfork.trace.boundary",
    "BoundaryHandler": "stepfork.trace.boundary",
    "active_handler": "stepfork.trace.boundary",
    # instrumentation
    "trace_tool": "stepfork.trace.instrument",
    "llm_request": "stepfork.trace.instrument",
    "allm_request": "stepfork.trace.instrument",
    "LLMOutput": "stepfork.trace.instrument",
    # recording
    "record": "stepfork.trace.recording",
    "RecordingSession": "stepfork.trace.recording",
    "active_recorder": "stepfork.trace.recording",
    "OrphanCallWarning": "stepfork.trace.recording",
    "DEFAULT_TRACE_DIR": "stepfork.trace.recording",
    "record_main": "stepfork.trace.command_line",
    # canonical JSON and values
    "canonical_json": "stepfork.trace.canonical",
    "fingerprint": "stepfork.trace.canonical",
    "loads_json": "stepfork.trace.canonical",
    "CANONICAL_JSON_PROFILE": "stepfork.trace.canonical",
    "canonical_json_bytes": "stepfork.trace.canonical",
    "hash_json": "stepfork.trace.canonical",
    "to_jsonable": "stepfork.trace.jsonable",
    "to_json_value": "stepfork.trace.jsonable",
    "Serializer": "stepfork.trace.jsonable",
    "from_jsonable": "stepfork.trace.jsonable",
    # redaction
    "redact_json": "stepfork.trace.redaction",
    "register_secret": "stepfork.trace.redaction",
    "Redactor": "stepfork.trace.redaction",
    "RedactionResult": "stepfork.trace.redaction",
    "RedactionFinding": "stepfork.trace.redaction",
    # bundle I/O
    "Trace": "stepfork.trace.bundle",
    "load_trace": "stepfork.trace.bundle",
    "load_verified_trace": "stepfork.trace.bundle",
    "save_trace": "stepfork.trace.saving",
    "BundleWriter": "stepfork.trace.bundle_writer",
    "build_manifest": "stepfork.trace.saving",
    "hash_event_payloads": "stepfork.trace.bundle_bytes",
    # integrity and validation
    "verify_bundle_integrity": "stepfork.trace.integrity",
    "IntegrityResult": "stepfork.trace.integrity",
    "IntegrityIssue": "stepfork.trace.integrity",
    "validate_bundle": "stepfork.trace.validation",
    "validate_trace": "stepfork.trace.validation",
    "ValidationResult": "stepfork.trace.validation",
    "ValidationIssue": "stepfork.trace.validation",
    # schemas
    "event_json_schema": "stepfork.trace.schema",
    "manifest_json_schema": "stepfork.trace.schema",
    "trace_json_schema": "stepfork.trace.schema",
    # errors
    "TraceError": "stepfork.trace.errors",
    "TraceSerializationError": "stepfork.trace.errors",
    "CanonicalJsonError": "stepfork.trace.errors",
    "TraceStorageError": "stepfork.trace.errors",
    "TraceIntegrityError": "stepfork.trace.errors",
    "RedactionError": "stepfork.trace.errors",
    "BoundaryContextError": "stepfork.trace.errors",
    "UnfinishedCallError": "stepfork.trace.errors",
    # models
    **{
        name: "stepfork.trace.models"
        for name in (
            "EventStatus",
            "EventType",
            "ReplayPolicy",
            "RunStatus",
            "IntegrityStatus",
            "EventBase",
            "RunStart",
            "LLMRequest",
            "LLMResponse",
            "ToolCall",
            "ToolResult",
            "StateChange",
            "ErrorEvent",
            "RunEnd",
            "Event",
            "JsonValue",
            "FailureInfo",
            "EnvironmentInfo",
            "TraceTotals",
            "TraceManifest",
            "RedactionEntry",
            "RedactionManifest",
            "IntegrityRecord",
            "REDACTION_REPLACEMENT",
            "SCHEMA_VERSION",
        )
    },
}

__all__ = [
    "__version__",
    "BoundaryCall",
    "BoundaryContextError",
    "BoundaryHandler",
    "BundleWriter",
    "CANONICAL_JSON_PROFILE",
    "CanonicalJsonError",
    "DEFAULT_TRACE_DIR",
    "EnvironmentInfo",
    "ErrorEvent",
    "Event",
    "EventBase",
    "EventStatus",
    "EventType",
    "FailureInfo",
    "IntegrityIssue",
    "IntegrityRecord",
    "IntegrityResult",
    "IntegrityStatus",
    "JsonValue",
    "LLMOutput",
    "LLMRequest",
    "LLMResponse",
    "OrphanCallWarning",
    "REDACTION_REPLACEMENT",
    "RecordingSession",
    "RedactionEntry",
    "RedactionError",
    "RedactionFinding",
    "RedactionManifest",
    "RedactionResult",
    "Redactor",
    "ReplayPolicy",
    "RunEnd",
    "RunStart",
    "RunStatus",
    "SCHEMA_VERSION",
    "Serializer",
    "StateChange",
    "ToolCall",
    "ToolResult",
    "Trace",
    "TraceError",
    "TraceManifest",
    "TraceSerializationError",
    "TraceIntegrityError",
    "TraceStorageError",
    "TraceTotals",
    "UnfinishedCallError",
    "ValidationIssue",
    "ValidationResult",
    "active_handler",
    "active_recorder",
    "allm_request",
    "build_manifest",
    "canonical_json",
    "canonical_json_bytes",
    "event_json_schema",
    "fingerprint",
    "from_jsonable",
    "hash_event_payloads",
    "hash_json",
    "llm_request",
    "load_trace",
    "load_verified_trace",
    "loads_json",
    "manifest_json_schema",
    "record",
    "record_main",
    "redact_json",
    "register_secret",
    "save_trace",
    "to_json_value",
    "to_jsonable",
    "trace_json_schema",
    "trace_tool",
    "validate_bundle",
    "validate_trace",
    "verify_bundle_integrity",
]

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from stepfork.trace.boundary import BoundaryCall, BoundaryHandler, active_handler
    from stepfork.trace.bundle import (
        BundleWriter,
        Trace,
        build_manifest,
        hash_event_payloads,
        load_trace,
        load_verified_trace,
        save_trace,
    )
    from stepfork.trace.canonical import (
        CANONICAL_JSON_PROFILE,
        canonical_json,
        canonical_json_bytes,
        fingerprint,
        hash_json,
        loads_json,
    )
    from stepfork.trace.command_line import record_main
    from stepfork.trace.errors import (
        BoundaryContextError,
        CanonicalJsonError,
        RedactionError,
        TraceError,
        TraceIntegrityError,
        TraceSerializationError,
        TraceStorageError,
        UnfinishedCallError,
    )
    from stepfork.trace.instrument import LLMOutput, allm_request, llm_request, trace_tool
    from stepfork.trace.integrity import IntegrityIssue, IntegrityResult, verify_bundle_integrity
    from stepfork.trace.jsonable import Serializer, from_jsonable, to_json_value, to_jsonable
    from stepfork.trace.models import (
        REDACTION_REPLACEMENT,
        SCHEMA_VERSION,
        EnvironmentInfo,
        ErrorEvent,
        Event,
        EventBase,
        EventStatus,
        EventType,
        FailureInfo,
        IntegrityRecord,
        IntegrityStatus,
        JsonValue,
        LLMRequest,
        LLMResponse,
        RedactionEntry,
        RedactionManifest,
        ReplayPolicy,
        RunEnd,
        RunStart,
        RunStatus,
        StateChange,
        ToolCall,
        ToolResult,
        TraceManifest,
        TraceTotals,
    )
    from stepfork.trace.recording import (
        DEFAULT_TRACE_DIR,
        OrphanCallWarning,
        RecordingSession,
        active_recorder,
        record,
    )
    from stepfork.trace.redaction import (
        RedactionFinding,
        RedactionResult,
        Redactor,
        redact_json,
        register_secret,
    )
    from stepfork.trace.schema import event_json_schema, manifest_json_schema, trace_json_schema
    from stepfork.trace.validation import (
        ValidationIssue,
        ValidationResult,
        validate_bundle,
        validate_trace,
    )


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562); AttributeError for unknown names."""
    try:
        module_name = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'stepfork.trace' has no attribute {name!r}") from None
    from importlib import import_module

    value = getattr(import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
