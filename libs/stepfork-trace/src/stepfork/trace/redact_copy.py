"""``redact_bundle``: write a redacted copy of a bundle (``stepfork redact BUNDLE -o OUT``; issue 14).

Bundles written by the earlier implementation can hold credentials its narrower rules missed. The copy is
the bundle as :func:`~stepfork.trace.bundle.save_trace` writes it: every event and the manifest redacted with
today's rules (docs/redaction.md), payload hashes recomputed, the new findings added to redactions.json,
extension files (``sdk-versions.json``, ``fork.json``) redacted and kept, and a new integrity.json. The
source is never changed (no in-place mode), and a source whose integrity does not verify is refused:
re-hashing it would turn a tampered bundle into one that verifies (a corrupt bundle is never repaired
silently, GUIDE.md). A legacy bundle (no integrity.json) is accepted, as replay accepts it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from stepfork.trace import _files
from stepfork.trace._outputs import overlap_problem
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.models import RedactionEntry
from stepfork.trace.redaction import Redactor

__all__ = ["RedactedCopy", "RedactionLine", "redact_bundle"]

# Integrity problems that make a copy unsafe: re-hashing would hide them (validation codes).
_TAMPERED = frozenset(
    {
        "integrity_mismatch",
        "payload_hash_mismatch",
        "integrity_metadata_invalid",
        "integrity_algorithm_unsupported",
    }
)


@dataclass(frozen=True)
class RedactionLine:
    """One redaction made by :func:`redact_bundle`: where (events.jsonl ``line`` or None for the manifest,
    ``event_id`` or ``__manifest__``, JSON Pointer ``path``) and why (``reason``); never the value."""

    line: int | None
    event_id: str
    path: str
    reason: str


@dataclass(frozen=True)
class RedactedCopy:
    """The result of :func:`redact_bundle`: ``source``, ``output`` (the new bundle) and the ``redactions``
    made in this pass, manifest first, then events by line (empty when the bundle was already clean)."""

    source: Path
    output: Path
    redactions: list[RedactionLine]

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict: source, output, redactions [{line, event_id, path, reason}]."""
        return {
            "source": str(self.source),
            "output": str(self.output),
            "redactions": [vars(r) for r in self.redactions],
        }


def redact_bundle(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    redactor: Redactor | None = None,
) -> RedactedCopy:
    """Write a redacted copy of the bundle ``source`` at ``output`` and return what was redacted.

    Args:
        source: a ``.sftrace`` bundle; read, never written.
        output: the new bundle (``.sftrace``); an existing bundle there is replaced only with ``overwrite``,
            a directory that is not a bundle never (``save_trace``'s rules).
        redactor: the rules (None: the default ones, with registered secrets).

    Raises:
        TraceStorageError: ``invalid_path`` when ``output`` is ``source``, inside it or contains it (never
            in place, even with ``overwrite``) or does not end in ``.sftrace``; ``integrity_mismatch`` when
            ``source`` fails integrity verification (integrity.json or stored payload hashes); the loader's
            codes for an unreadable ``source``; ``already_exists``/``not_a_bundle`` for ``output``.
        RedactionError: a protected field (an id, a timestamp) holds a secret, which cannot be rewritten.
    """
    from stepfork.trace.bundle import MANIFEST_EVENT_ID, load_trace, save_trace
    from stepfork.trace.canonical import compact_json
    from stepfork.trace.minting import EXTENSION_NAME as MINTED
    from stepfork.trace.minting import RecordedMinted
    from stepfork.trace.models import event_fields
    from stepfork.trace.reading import read_extension
    from stepfork.trace.redaction import default_redactor, redact_event, redact_manifest
    from stepfork.trace.validation import validate_bundle

    src, target = Path(source), Path(output)
    problem = overlap_problem(src, target, command="redact")
    if problem is not None:
        raise TraceStorageError(problem, code="invalid_path", path=str(target))
    _files.check_target(target, overwrite=overwrite)  # refuse before reading anything big
    checked = validate_bundle(src, strict=False, verify_integrity=True)
    unreadable = [i for i in checked.issues if i.code not in _TAMPERED and i.code != "integrity_unverified"]
    if checked.unreadable and unreadable:
        first = unreadable[0]
        raise TraceStorageError(first.message, code=first.code, path=str(src))
    tampered = sorted({i.code for i in checked.issues} & _TAMPERED)
    if tampered:
        raise TraceStorageError(
            f"{src} fails integrity verification ({', '.join(tampered)}); a redacted copy would hide that. "
            f"Check it with stepfork validate {src} --verify-integrity",
            code="integrity_mismatch",
            path=str(src),
        )
    trace = load_trace(src)
    lines: list[RedactionLine] = []
    safe = (redactor or default_redactor).redact_text  # a pointer's key can itself be the secret
    _, found = redact_manifest(trace.manifest.model_dump(mode="json"), redactor)
    lines += [RedactionLine(None, MANIFEST_EVENT_ID, safe(f.path), f.reason) for f in found]
    shown: list[str] = []  # the redacted events' text: minted.json keeps only values still shown there
    for number, event in enumerate(trace.events, start=1):
        redacted, found = redact_event(dict(event_fields(event)), redactor)
        lines += [RedactionLine(number, event.id, safe(f.path), f.reason) for f in found]
        shown.append(compact_json(redacted).decode("utf-8", "replace"))
    extras: dict[str, bytes] = {}
    for name in _extension_names(src):
        value = read_extension(src, name.removesuffix(".json"))
        clean = (redactor or default_redactor).redact(value).value
        if name == f"{MINTED}.json":
            minted = RecordedMinted.parse(clean)
            clean = minted.shown_in("\x00".join(shown)).to_json() if minted is not None else clean
        extras[name] = _files.pretty_json(clean)
    save_trace(trace, target, overwrite=overwrite, redactor=redactor, extra_files=extras)
    return RedactedCopy(src, target, lines)


def _extension_names(bundle: Path) -> list[str]:
    """Extension files the bundle's integrity.json lists (``<name>.json`` beyond the payload files)."""
    from stepfork.trace.canonical import loads_json

    try:
        data = loads_json(_files.read_bundle_file(bundle, _files.INTEGRITY_FILE, unsafe_code="unsafe_path"))
    except TraceStorageError:
        return []  # legacy bundle: no integrity.json, no listed extensions
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return []
    return [
        name
        for name in files
        if name not in _files.PAYLOAD_FILES and name.endswith(".json") and name != _files.INTEGRITY_FILE
    ]


def entries_of(copy: RedactedCopy) -> list[RedactionEntry]:
    """The :class:`RedactionEntry` form of ``copy.redactions`` (as redactions.json lists them)."""
    return [RedactionEntry(event_id=r.event_id, path=r.path, reason=r.reason) for r in copy.redactions]
