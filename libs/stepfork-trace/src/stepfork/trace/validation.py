"""Validation of a trace or a bundle: every issue code of schema 0.1, in strict or partial mode.

Reference codes (interop/REFERENCE-NOTES.md section 4) keep their meaning. Checks the reference missed
(notes 9 item 5) have new codes, all strict-only so that ``--partial`` keeps accepting what the reference
accepted: ``step_mismatch``, ``run_end_position``, ``unpaired_call``, ``unpaired_result``,
``status_mismatch``, ``failure_step``; ``totals_mismatch`` is structural like ``event_count_mismatch``.
The rules, their modes and the golden verdicts are listed in docs/format.md ("Validation").

A finding that must not fail validation is a warning (``ValidationResult.warnings``): a manifest left at
``running`` beside a terminal run_end, as in the reference's diff_* golden bundles; ``run_incomplete``, a
recording that is still going or was killed (running, totals never written, no run_end); and, in partial mode
only, ``torn_final_line``: a ``running`` bundle whose last events.jsonl line was cut by a crash (SIGKILL
can stop a write part-way; every flushed event is on complete lines before it); ``unredacted_secret``, a
value the redaction rules would replace stored in clear (``_secret_scan``; issue 14). Strict mode and
``load_trace`` still refuse that line with ``invalid_json``; nothing is repaired on disk.

``validate_bundle`` streams events.jsonl (``reading.EventStream``): each line is parsed exactly as the
loader parses it, its payload hashes are checked right then, and only a slim record of the event
(``_validation_checks.EventMeta``) is kept for the other checks, so memory follows the largest line and the
number of events, not the payload bytes. The result types and codes live in ``_validation_types``, the
checks in ``_validation_checks``; this module re-exports them.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from stepfork.trace import _files, reading
from stepfork.trace._secret_scan import UNREDACTED_SECRET as UNREDACTED_SECRET
from stepfork.trace._secret_scan import event_secret_warnings, manifest_secret_warnings
from stepfork.trace._urls import url_of
from stepfork.trace._validation_checks import EventMeta, check_events, payload_hash_issues
from stepfork.trace._validation_types import CHECK_COUNT as CHECK_COUNT
from stepfork.trace._validation_types import CHECK_EVENTS as CHECK_EVENTS
from stepfork.trace._validation_types import CHECK_IDS as CHECK_IDS
from stepfork.trace._validation_types import CHECK_INTEGRITY as CHECK_INTEGRITY
from stepfork.trace._validation_types import CHECK_MANIFEST as CHECK_MANIFEST
from stepfork.trace._validation_types import CHECK_STRICT as CHECK_STRICT
from stepfork.trace._validation_types import RUN_INCOMPLETE as RUN_INCOMPLETE
from stepfork.trace._validation_types import STRICT_CODES as STRICT_CODES
from stepfork.trace._validation_types import TIMESTAMP_ORDER as TIMESTAMP_ORDER
from stepfork.trace._validation_types import TORN_FINAL_LINE as TORN_FINAL_LINE
from stepfork.trace._validation_types import UNREADABLE_CODES as UNREADABLE_CODES
from stepfork.trace._validation_types import ValidationCheck as ValidationCheck
from stepfork.trace._validation_types import ValidationIssue as ValidationIssue
from stepfork.trace._validation_types import ValidationResult as ValidationResult
from stepfork.trace._validation_types import checks_for
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.integrity import verify_bundle_integrity
from stepfork.trace.models import IntegrityStatus, RunStatus, TraceManifest

if TYPE_CHECKING:  # annotations only: bundle.load_verified_trace imports this module
    from stepfork.trace.bundle import Trace


def validate_trace(
    trace: Trace, *, strict: bool = True, verify_payload_hashes: bool = False
) -> ValidationResult:
    """Validate an in-memory ``trace`` (notes 4 plus notes 9 item 5); never raises for trace content.

    ``strict=False`` (``--partial``) skips the strict-only codes and, while the manifest says ``running``,
    the totals (a killed recorder leaves them at 0). ``verify_payload_hashes`` checks each event's
    input_hash/output_hash against the fingerprint of its payload (notes 2.2). Gives the same verdict as
    :func:`validate_bundle` on the saved bundle, integrity.json aside.
    """
    issues: list[ValidationIssue] = []
    try:
        trace.manifest  # noqa: B018 - validates status against failure
    except ValidationError as exc:
        issues.append(ValidationIssue("invalid_manifest", f"manifest: {exc.errors()[0]['msg']}"))
    metas = [EventMeta.of(event, trace.run_id) for event in trace.events]
    hashes = None
    if verify_payload_hashes:
        hashes = [issue for event in trace.events for issue in payload_hash_issues(event)]
    findings = check_events(trace, metas, strict=strict, hash_issues=hashes)
    issues += findings.issues
    secrets = [w for event in trace.events for w in event_secret_warnings(event, None)]
    with contextlib.suppress(ValidationError):
        secrets = manifest_secret_warnings(trace.manifest) + secrets
    return ValidationResult(
        issues=issues,
        warnings=findings.warnings + secrets,
        checks=checks_for(issues, strict=strict, integrity=verify_payload_hashes),
        incomplete=findings.incomplete,
    )


def replay_issues(trace: Trace) -> list[ValidationIssue]:
    """The issues for which every command that replays or rewrites a bundle refuses ``trace``, in check
    order (``bundle.load_verified_trace``): validation's own, in strict mode (partial while the
    manifest says ``running``: a killed recording keeps totals 0 and may be replayed up to where it
    stopped), and each stored payload hash that does not match its payload (``payload_hash_mismatch``:
    the bundle was edited, integrity.json rewritten or not). A null stored hash (a legacy bundle) and the
    warnings are not reasons, nor a count the manifest leaves out of its totals (notes 1.2, as
    ``load_verified_trace``'s event count). Empty: the bundle may be replayed.

    Cost: the event metadata checks, and each payload hash proven by orjson's sorted encoding first, as
    replay proves its calls' fingerprints (``canonical.canonical_of_fingerprint``); the exact rule only
    where that does not prove it. No secret scan (that is a warning).
    """
    strict = trace.status != RunStatus.RUNNING
    metas = [EventMeta.of(event, trace.run_id) for event in trace.events]
    stale = [
        issue
        for event in trace.events
        for issue in payload_hash_issues(event)
        if issue.code == "payload_hash_mismatch"
    ]
    given = trace.totals.model_fields_set  # a count the manifest leaves out is not compared (notes 1.2)
    return [
        issue
        for issue in check_events(trace, metas, strict=strict, hash_issues=stale).issues
        if not (location := issue.location or "").startswith(_TOTALS) or location[len(_TOTALS) :] in given
    ]


_TOTALS = "manifest.json:totals."


def validate_bundle(
    path: str | os.PathLike[str], *, strict: bool = True, verify_integrity: bool = False
) -> ValidationResult:
    """Validate the bundle at ``path``, streaming its events; never raises for bundle content (notes 4).

    A missing directory or required file gives only ``missing_file`` issues; any other read error gives
    one issue with the loader's code (the one ``load_trace`` raises). ``verify_integrity`` checks
    integrity.json (computed before reading, so ``legacy`` is known even for an unreadable bundle) and the
    per-event payload hashes; when the integrity status is not ``verified`` its issues are appended. A
    path missing a required file (manifest.json, events.jsonl, redactions.json; an empty directory) is not
    a legacy bundle: its ``integrity`` is None rather than ``unverified_legacy`` (NEWCOMER3 finding 6).
    Memory: one events.jsonl line and its event at a time, plus a few hundred bytes per event.
    """
    url = url_of(path)
    if url is not None:  # object storage: validate the downloaded copy, whose integrity was verified
        return _validate_url(url, strict=strict, verify_integrity=verify_integrity)
    bundle = Path(path)
    integrity = verify_bundle_integrity(bundle) if verify_integrity else None
    status = None if integrity is None else integrity.status
    integrity_issues: list[ValidationIssue] = []
    if integrity is not None and integrity.status != IntegrityStatus.VERIFIED:
        integrity_issues = [ValidationIssue(i.code, i.message, location=i.file) for i in integrity.issues]
    missing = _missing_files(bundle)
    if missing:
        # no manifest.json (an empty directory, a mistyped path): not a bundle at all, so not a legacy one
        # either (spec cli-reference "validate": exit 3 is for a legacy bundle, missing_file is exit 2)
        if status == IntegrityStatus.UNVERIFIED_LEGACY:
            status = None
        checks = [ValidationCheck(CHECK_MANIFEST, False)]
        return ValidationResult(issues=missing, integrity=status, checks=checks)
    try:
        manifest, metas, hashes, torn, secrets = _read_events(bundle, strict=strict, hashes=verify_integrity)
    except TraceStorageError as exc:
        name = Path(exc.path).name if exc.path else None
        location = f"{name}:{exc.line}" if name and exc.line else name
        issue = ValidationIssue(exc.code, str(exc), step=None, location=location)
        if name == _files.EVENTS_FILE:
            checks = [ValidationCheck(CHECK_MANIFEST, True), ValidationCheck(CHECK_EVENTS, False)]
        else:
            checks = [ValidationCheck(CHECK_MANIFEST, False)]
        if integrity is not None:
            checks.append(ValidationCheck(CHECK_INTEGRITY, integrity.verified))
        return ValidationResult(issues=[issue, *integrity_issues], integrity=status, checks=checks)
    findings = check_events(manifest, metas, strict=strict, hash_issues=hashes)
    issues = [*findings.issues, *integrity_issues]
    if torn is not None:  # partial mode, running bundle: a write cut by a crash, not a damaged bundle
        message = f"events.jsonl:{torn}: final line cut by a crash (no trailing newline); not read"
        findings.warnings.append(ValidationIssue(TORN_FINAL_LINE, message, location=f"events.jsonl:{torn}"))
    findings.warnings.extend(secrets)
    return ValidationResult(
        issues=issues,
        warnings=findings.warnings,
        integrity=status,
        checks=checks_for(issues, strict=strict, integrity=verify_integrity),
        incomplete=findings.incomplete,
    )


def _validate_url(url: str, *, strict: bool, verify_integrity: bool) -> ValidationResult:
    """:func:`validate_bundle` of a bundle URL: an unfinished upload, a missing extra or bytes that do not
    match integrity.json are one issue with the reader's code."""
    from stepfork.trace.remote import fetched_bundle

    try:
        with fetched_bundle(url) as local:
            return validate_bundle(local, strict=strict, verify_integrity=verify_integrity)
    except TraceStorageError as exc:
        issue = ValidationIssue(exc.code, str(exc), step=None, location=url)
        return ValidationResult(issues=[issue], checks=[ValidationCheck(CHECK_MANIFEST, False)])


def _read_events(
    bundle: Path, *, strict: bool, hashes: bool
) -> tuple[TraceManifest, list[EventMeta], list[ValidationIssue] | None, int | None, list[ValidationIssue]]:
    """Stream the bundle as ``load_trace`` reads it (same checks, same first error), keeping per event only
    its :class:`EventMeta` and, with ``hashes``, its payload hash issues; the final torn line's number;
    the ``unredacted_secret`` warnings (manifest first, then events by line).
    """
    with reading.open_bundle(bundle) as opened:
        run_id = opened.manifest.run_id
        secrets = manifest_secret_warnings(opened.manifest)
        stream = opened.events(torn_tail_ok=not strict)
        metas: list[EventMeta] = []
        hash_issues: list[ValidationIssue] | None = [] if hashes else None
        with _files.cyclic_gc_paused():  # the records live on: see cyclic_gc_paused
            for line, event in enumerate(stream, start=1):
                metas.append(EventMeta.of(event, run_id))
                if hash_issues is not None:
                    hash_issues += payload_hash_issues(event)
                secrets += event_secret_warnings(event, line)
                del event  # the next line is read before the loop rebinds the name: drop the payloads now
        opened.redactions()  # parsed for its errors only, as load_trace does
    return opened.manifest, metas, hash_issues, stream.torn, secrets


def _missing_files(bundle: Path) -> list[ValidationIssue]:
    if not bundle.is_dir():
        return [ValidationIssue("missing_file", _files.not_a_bundle(bundle), location=str(bundle))]
    return [
        ValidationIssue("missing_file", f"missing required file {name}", location=name)
        for name in _files.PAYLOAD_FILES
        if not (bundle / name).exists() and not (bundle / name).is_symlink()
    ]
