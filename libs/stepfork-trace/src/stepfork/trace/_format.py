"""The names and values of schema 0.1 (interop/REFERENCE-NOTES.md sections 1-2), without pydantic.

The enums of the format, the event types' hashed fields and the field names redaction protects, in a module
that imports nothing heavy: :mod:`stepfork.trace.models` (the pydantic models, the one definition of the
format's structure) re-exports every name here, and the pydantic-free quick verdict of ``stepfork
validate`` (``_quick_validation``) uses them without importing pydantic.
tests/trace/test_quick_validation.py checks that the field names here are those of the models.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

SCHEMA_VERSION: Final = "0.1"
BUNDLE_FORMAT: Final = "stepfork"
REDACTION_REPLACEMENT: Final = "[REDACTED]"


class EventStatus(StrEnum):
    """Status of one event (notes 1.3)."""

    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"


class EventType(StrEnum):
    """The eight event types of schema 0.1 (notes 1.4)."""

    RUN_START = "run_start"
    LLM_REQUEST = "llm_request"
    LLM_RESPONSE = "llm_response"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    STATE_CHANGE = "state_change"
    ERROR = "error"
    RUN_END = "run_end"


class ReplayPolicy(StrEnum):
    """Per-event replay policy values (notes 1.6). Replay honours ``forbidden`` and ``manual`` per event."""

    FROZEN = "frozen"
    LIVE = "live"
    MANUAL = "manual"
    FORBIDDEN = "forbidden"
    DERIVED = "derived"


class RunStatus(StrEnum):
    """Status of a run in the manifest and in ``run_end.run_status`` (notes 1.2)."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class IntegrityStatus(StrEnum):
    """Outcome of integrity verification (notes 2.4)."""

    VERIFIED = "verified"
    MISMATCH = "mismatch"
    UNVERIFIED_LEGACY = "unverified_legacy"


# Which payload field each hash covers (notes 2.2); None: that hash is always null for the type.
HASHED_FIELDS: Final[dict[EventType, tuple[str | None, str | None]]] = {
    EventType.RUN_START: ("input", None),
    EventType.LLM_REQUEST: ("input", None),
    EventType.TOOL_CALL: ("input", None),
    EventType.LLM_RESPONSE: (None, "output"),
    EventType.TOOL_RESULT: (None, "output"),
    EventType.STATE_CHANGE: ("before", "after"),
    EventType.ERROR: (None, "details"),
    EventType.RUN_END: (None, "output"),
}

# The fields every event has, in schema order (notes 1.3): the rest of an event is its type's payload.
COMMON_EVENT_FIELDS: Final[tuple[str, ...]] = (
    "id",
    "run_id",
    "parent_id",
    "step",
    "type",
    "timestamp",
    "duration_ms",
    "status",
    "replay_policy",
    "input_hash",
    "output_hash",
    "redactions",
)

# Fields redaction never rewrites (notes section 3, "Protected fields").
PROTECTED_EVENT_FIELDS: Final = frozenset(
    {
        *COMMON_EVENT_FIELDS,
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "cost_usd",
        "run_status",
    }
)
PROTECTED_MANIFEST_FIELDS: Final = frozenset(
    {"format", "schema_version", "run_id", "created_at", "status", "totals"}
)
