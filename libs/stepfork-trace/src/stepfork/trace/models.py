"""Pydantic models of the schema 0.1 bundle: manifest, the eight event types, redactions, integrity.

The field names, order, types and constraints are those of interop/REFERENCE-NOTES.md sections 1.2-1.7
and 2.4; every model forbids unknown keys, as the reference does, so bundles move between implementations.
Payload fields (``input``, ``output``, ``before``, ``after``, ``details``) hold JSON values and are not
validated field by field (that would copy every payload); storage guarantees they are JSON.

Timestamps are timezone-aware; they serialize in UTC with a ``Z`` suffix and a 6-digit fraction only when
the microseconds are non-zero (notes 1.3).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    model_validator,
)

# The format's names and values live in a pydantic-free module; every one is re-exported here.
from stepfork.trace._format import BUNDLE_FORMAT as BUNDLE_FORMAT
from stepfork.trace._format import COMMON_EVENT_FIELDS as COMMON_EVENT_FIELDS
from stepfork.trace._format import HASHED_FIELDS as HASHED_FIELDS
from stepfork.trace._format import PROTECTED_EVENT_FIELDS as PROTECTED_EVENT_FIELDS
from stepfork.trace._format import PROTECTED_MANIFEST_FIELDS as PROTECTED_MANIFEST_FIELDS
from stepfork.trace._format import REDACTION_REPLACEMENT as REDACTION_REPLACEMENT
from stepfork.trace._format import SCHEMA_VERSION as SCHEMA_VERSION
from stepfork.trace._format import EventStatus as EventStatus
from stepfork.trace._format import EventType as EventType
from stepfork.trace._format import IntegrityStatus as IntegrityStatus
from stepfork.trace._format import ReplayPolicy as ReplayPolicy
from stepfork.trace._format import RunStatus as RunStatus

JsonValue: TypeAlias = Any
"""A JSON value: None, bool, int (any size), finite float, str, list of JSON values, or dict with str keys."""


def format_timestamp(value: datetime) -> str:
    """Return ``value`` in UTC as ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` (notes 1.3)."""
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


def _require_aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must be timezone-aware (naive datetimes are rejected)")
    return value


Timestamp = Annotated[
    datetime,
    AfterValidator(_require_aware),
    PlainSerializer(format_timestamp, return_type=str, when_used="json"),
]
NonEmptyStr = Annotated[str, Field(min_length=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def new_event_id() -> str:
    """A fresh event id, ``evt_`` + 32 lowercase hex (REFERENCE-API.md: events built by hand get one)."""
    return "evt_" + uuid.uuid4().hex


def new_run_id() -> str:
    """A fresh run id, ``run_`` + 32 lowercase hex (default of ``Trace.run_id`` and ``EventBase.run_id``)."""
    return "run_" + uuid.uuid4().hex


_STRICT = ConfigDict(extra="forbid", use_enum_values=False, validate_default=True)


def _ids_required(schema: dict[str, Any]) -> None:
    """Keep ``id``/``run_id`` required in the JSON Schema of stored events: the defaults are for events
    built in Python; a bundle's events always carry both (notes 1.3)."""
    properties = schema.get("properties", {})
    required = set(schema.get("required", [])) | ({"id", "run_id"} & set(properties))
    schema["required"] = [name for name in properties if name in required]


_EVENT_CONFIG = ConfigDict(
    extra="forbid", use_enum_values=False, validate_default=True, json_schema_extra=_ids_required
)


class EventBase(BaseModel):
    """The 12 common fields every event starts with, in this order (notes 1.3).

    ``id`` and ``run_id`` default to fresh ``evt_``/``run_`` ids, as in the reference, so tests can build
    events by hand; an event placed in a :class:`~stepfork.trace.bundle.Trace` without an explicit
    ``run_id`` takes the trace's.
    """

    model_config = _EVENT_CONFIG

    id: NonEmptyStr = Field(default_factory=new_event_id)
    run_id: NonEmptyStr = Field(default_factory=new_run_id)
    parent_id: NonEmptyStr | None = None
    step: NonNegativeInt = 0
    type: EventType
    timestamp: Timestamp = Field(default_factory=utc_now)
    duration_ms: NonNegativeInt | None = None
    status: EventStatus = EventStatus.OK
    replay_policy: ReplayPolicy = ReplayPolicy.FROZEN
    input_hash: str | None = None
    output_hash: str | None = None
    redactions: list[str] = Field(default_factory=list)


class RunStart(EventBase):
    """First event of a run; ``input`` is the ``run_input`` given to ``record()`` (or null)."""

    type: Literal[EventType.RUN_START] = EventType.RUN_START
    input: JsonValue = None


class LLMRequest(EventBase):
    """An LLM call: provider, model and the request input (a JSON value)."""

    type: Literal[EventType.LLM_REQUEST] = EventType.LLM_REQUEST
    provider: NonEmptyStr | None = None
    model: NonEmptyStr
    input: JsonValue


class LLMResponse(EventBase):
    """The response to an LLM call, with optional token usage and cost (USD)."""

    type: Literal[EventType.LLM_RESPONSE] = EventType.LLM_RESPONSE
    model: NonEmptyStr | None = None
    output: JsonValue
    prompt_tokens: NonNegativeInt | None = None
    completion_tokens: NonNegativeInt | None = None
    total_tokens: NonNegativeInt | None = None
    cost_usd: Annotated[float, Field(ge=0)] | None = None


class ToolCall(EventBase):
    """A tool call: the tool name and its bound input."""

    type: Literal[EventType.TOOL_CALL] = EventType.TOOL_CALL
    name: NonEmptyStr
    input: JsonValue


class ToolResult(EventBase):
    """The result of a tool call; ``status`` is ``error`` when the tool raised."""

    type: Literal[EventType.TOOL_RESULT] = EventType.TOOL_RESULT
    name: NonEmptyStr
    output: JsonValue


class StateChange(EventBase):
    """A state transition recorded by ``RecordingSession.record_state_change``."""

    type: Literal[EventType.STATE_CHANGE] = EventType.STATE_CHANGE
    key: NonEmptyStr | None = None
    before: JsonValue = None
    after: JsonValue = None


class ErrorEvent(EventBase):
    """An error: its qualified type name, its (redacted) message and optional JSON details."""

    type: Literal[EventType.ERROR] = EventType.ERROR
    status: EventStatus = EventStatus.ERROR
    error_type: NonEmptyStr
    message: NonEmptyStr
    details: JsonValue = None


class RunEnd(EventBase):
    """Last event of a run: the final status and the output given to ``set_output`` (or null)."""

    type: Literal[EventType.RUN_END] = EventType.RUN_END
    run_status: RunStatus
    output: JsonValue = None


Event = Annotated[
    RunStart | LLMRequest | LLMResponse | ToolCall | ToolResult | StateChange | ErrorEvent | RunEnd,
    Field(discriminator="type"),
]
"""Any schema 0.1 event, discriminated on ``type``."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

EVENT_CLASSES: dict[EventType, type[EventBase]] = {
    EventType.RUN_START: RunStart,
    EventType.LLM_REQUEST: LLMRequest,
    EventType.LLM_RESPONSE: LLMResponse,
    EventType.TOOL_CALL: ToolCall,
    EventType.TOOL_RESULT: ToolResult,
    EventType.STATE_CHANGE: StateChange,
    EventType.ERROR: ErrorEvent,
    EventType.RUN_END: RunEnd,
}


class FailureInfo(BaseModel):
    """Why a run failed: the exception's type name, its redacted message and the step of its error event."""

    model_config = _STRICT

    type: NonEmptyStr
    message: NonEmptyStr
    step: NonNegativeInt


class EnvironmentInfo(BaseModel):
    """Where the run was recorded: Python ``"3.11"``, ``sys.platform``, the Stepfork version."""

    model_config = _STRICT

    python: str | None = None
    os: str | None = None
    stepfork_version: str | None = None


class TraceTotals(BaseModel):
    """Counts over the events: events, llm_request and tool_call counts, cost (USD) and duration (ms)."""

    model_config = _STRICT

    events: NonNegativeInt = 0
    llm_calls: NonNegativeInt = 0
    tool_calls: NonNegativeInt = 0
    cost_usd: Annotated[float, Field(ge=0)] | None = None
    duration_ms: NonNegativeInt | None = None


class TraceManifest(BaseModel):
    """``manifest.json`` (notes 1.2). ``failure`` is set exactly when ``status`` is ``failed``."""

    model_config = _STRICT

    format: Literal["stepfork"] = BUNDLE_FORMAT
    schema_version: Literal["0.1"] = SCHEMA_VERSION
    run_id: NonEmptyStr
    agent_name: NonEmptyStr
    created_at: Timestamp
    status: RunStatus = RunStatus.RUNNING
    failure: FailureInfo | None = None
    environment: EnvironmentInfo = Field(default_factory=EnvironmentInfo)
    totals: TraceTotals = Field(default_factory=TraceTotals)

    @model_validator(mode="after")
    def _failure_matches_status(self) -> TraceManifest:
        if (self.status == RunStatus.FAILED) != (self.failure is not None):
            raise ValueError("failure must be set exactly when status is 'failed'")
        return self


class RedactionEntry(BaseModel):
    """One redaction: the event (or ``__manifest__``), the JSON Pointer, the reason, ``[REDACTED]``."""

    model_config = _STRICT

    event_id: NonEmptyStr
    path: str
    reason: NonEmptyStr
    replacement: Literal["[REDACTED]"] = REDACTION_REPLACEMENT


class RedactionManifest(BaseModel):
    """``redactions.json`` (notes 1.7)."""

    model_config = _STRICT

    schema_version: Literal["0.1"] = SCHEMA_VERSION
    entries: list[RedactionEntry] = Field(default_factory=list)


class IntegrityRecord(BaseModel):
    """``integrity.json`` (notes 2.4): SHA-256 digests of the exact bytes of the three payload files."""

    model_config = _STRICT

    schema_version: Literal["0.1"] = SCHEMA_VERSION
    algorithm: str = "sha256"
    files: dict[str, str]


def event_fields(event: EventBase) -> list[tuple[str, Any]]:
    """The ``(name, JSON value)`` pairs of ``event`` in model order: 12 common fields, then type fields."""
    fields: list[tuple[str, Any]] = []
    for name in type(event).model_fields:
        value = getattr(event, name)
        if name == "timestamp":
            value = format_timestamp(value)
        elif isinstance(value, Enum):
            value = value.value
        fields.append((name, value))
    return fields
