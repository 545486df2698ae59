"""The bytes of a bundle's files as they are written (schema 0.1; docs/format.md): an event's events.jsonl
line (as stored: :func:`serialize_event`; redacted and hashed: :func:`prepare_event`), manifest.json and
redactions.json. Both writers use them: :func:`stepfork.trace.saving.save_trace` (a whole trace at once)
and :class:`stepfork.trace.bundle_writer.BundleWriter` (a recording, line by line). Re-exported by
:mod:`stepfork.trace.bundle`.
"""

from __future__ import annotations

from collections.abc import Iterable

from stepfork.trace import _files
from stepfork.trace.canonical import fingerprint
from stepfork.trace.models import (
    HASHED_FIELDS,
    EventBase,
    RedactionEntry,
    RedactionManifest,
    TraceManifest,
    event_fields,
)
from stepfork.trace.redaction import Redactor, redact_event, redact_manifest

MANIFEST_EVENT_ID = "__manifest__"


def serialize_event(event: EventBase) -> bytes:
    """Return the events.jsonl line of ``event`` as stored, ending in ``\\n`` (no redaction, no hashing).

    Payload dicts keep their key order (``_files.event_line``), so a loaded bundle re-serializes to its
    own bytes.

    Raises CanonicalJsonError when a payload is not plain JSON.
    """
    return _files.event_line(event_fields(event))


def prepare_event(event: EventBase, redactor: Redactor | None = None) -> tuple[bytes, list[RedactionEntry]]:
    """Redact ``event``, recompute its hashes and return ``(line, new redaction entries)``.

    New redaction paths are appended to the event's ``redactions`` (existing ones kept, no duplicates);
    ``input_hash``/``output_hash`` become the fingerprints of the redacted fields of notes 2.2 (H(null)
    for a null field; null where the type hashes nothing). ``event`` itself is not changed.

    Raises:
        RedactionError: a secret sits in a protected field (notes 3).
        CanonicalJsonError: a payload is not plain JSON.
    """
    redacted, findings = redact_event(dict(event_fields(event)), redactor)
    paths = list(event.redactions)
    entries: list[RedactionEntry] = []
    for finding in findings:
        if finding.path not in paths:
            paths.append(finding.path)
        entries.append(RedactionEntry(event_id=event.id, path=finding.path, reason=finding.reason))
    input_field, output_field = HASHED_FIELDS[event.type]
    redacted["redactions"] = paths
    redacted["input_hash"] = fingerprint(redacted[input_field]) if input_field else None
    redacted["output_hash"] = fingerprint(redacted[output_field]) if output_field else None
    line = _files.event_line((name, redacted[name]) for name in type(event).model_fields)
    return line, entries


def hash_event_payloads(event: EventBase) -> EventBase:
    """A copy of ``event`` with ``input_hash``/``output_hash`` set to the fingerprints of its payload fields
    as stored (notes 2.2; null where the type hashes nothing). The reference's name; saving does the same
    after redaction (:func:`prepare_event`). Raises CanonicalJsonError when a payload is not plain JSON."""
    input_field, output_field = HASHED_FIELDS[event.type]
    return event.model_copy(
        update={
            "input_hash": fingerprint(getattr(event, input_field)) if input_field else None,
            "output_hash": fingerprint(getattr(event, output_field)) if output_field else None,
        }
    )


def manifest_bytes(
    manifest: TraceManifest, redactor: Redactor | None = None
) -> tuple[bytes, list[RedactionEntry]]:
    """Redact ``manifest`` and return its manifest.json bytes with the redaction entries found.

    Raises RedactionError when a protected manifest field holds a secret (notes 3).
    """
    redacted, findings = redact_manifest(manifest.model_dump(mode="json"), redactor)
    entries = [RedactionEntry(event_id=MANIFEST_EVENT_ID, path=f.path, reason=f.reason) for f in findings]
    return _files.pretty_json(redacted), entries


def redactions_bytes(entries: Iterable[RedactionEntry]) -> bytes:
    """redactions.json bytes of ``entries``, de-duplicated on (event_id, path, reason), first kept."""
    seen: set[tuple[str, str, str]] = set()
    unique: list[RedactionEntry] = []
    for entry in entries:
        key = (entry.event_id, entry.path, entry.reason)
        if key not in seen:
            seen.add(key)
            unique.append(entry)
    return _files.pretty_json(RedactionManifest(entries=unique).model_dump(mode="json"))
