"""Finding secrets a bundle still holds: the ``unredacted_secret`` warning of validation (issue 14).

Bundles written by the earlier implementation can hold credentials its narrower rules missed (an
``X-Api-Key`` header, an AWS key in free text). Validation runs the same redaction rules the writer runs
(``stepfork.trace.redaction``, docs/redaction.md) over every event and the manifest and reports each finding
as a warning: where it is (events.jsonl line, event id, step, JSON Pointer) and why (``sensitive_key``,
``credential_pattern``, ``registered_secret``), never the value. A warning does not change the verdict or
the exit code; ``stepfork redact`` writes a redacted copy.
"""

from __future__ import annotations

from typing import Any

from stepfork.trace._validation_types import ValidationIssue
from stepfork.trace.errors import RedactionError
from stepfork.trace.models import EventBase, TraceManifest

UNREDACTED_SECRET = "unredacted_secret"  # noqa: S105 - a warning code, not a credential
"""Warning code: a value the redaction rules would replace is stored in clear."""

_HINT = "stepfork redact writes a redacted copy"


def _safe(text: str) -> str:
    from stepfork.trace.redaction import redact_text

    return redact_text(text)  # a pointer or an id can itself be the secret


def event_secret_warnings(event: EventBase, line: int | None) -> list[ValidationIssue]:
    """The ``unredacted_secret`` warnings of one event (``line``: its 1-based events.jsonl line or None).

    Each names the line, the event and the JSON Pointer into the event (``/input/headers/X-Api-Key``);
    a secret in a protected field (an id, a timestamp: the redactor refuses to rewrite those) is one
    warning naming no pointer. Returns an empty list for a clean event.
    """
    from stepfork.trace.models import event_fields
    from stepfork.trace.redaction import redact_event

    where = f"events.jsonl:{line}" if line is not None else f"step {event.step}"
    location = f"events.jsonl:{line}" if line is not None else None
    event_id = _safe(event.id)
    try:
        _, findings = redact_event(dict(event_fields(event)))
    except RedactionError:
        message = f"{where}: a protected field holds a value that looks like a secret; it cannot be redacted"
        return [ValidationIssue(UNREDACTED_SECRET, message, event_id, event.step, location)]
    return [
        ValidationIssue(
            UNREDACTED_SECRET,
            f"{where}: unredacted secret at {_safe(finding.path)} ({finding.reason}); {_HINT}",
            event_id,
            event.step,
            location,
        )
        for finding in findings
    ]


def manifest_secret_warnings(manifest: TraceManifest | dict[str, Any]) -> list[ValidationIssue]:
    """The ``unredacted_secret`` warnings of the manifest (location ``manifest.json``, pointer into it)."""
    from stepfork.trace.redaction import redact_manifest

    data = manifest.model_dump(mode="json") if isinstance(manifest, TraceManifest) else manifest
    try:
        _, findings = redact_manifest(data)
    except RedactionError:
        message = "manifest.json: a protected field holds a value that looks like a secret"
        return [ValidationIssue(UNREDACTED_SECRET, message, location="manifest.json")]
    return [
        ValidationIssue(
            UNREDACTED_SECRET,
            f"manifest.json: unredacted secret at {_safe(f.path)} ({f.reason}); {_HINT}",
            location="manifest.json",
        )
        for f in findings
    ]
