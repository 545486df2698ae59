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
can stop a write part-way; every flushed event is on complete lines before it). Strict mode and
``load_trace`` still refuse that line with ``invalid_json``; nothing is repaired on disk.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stepfork.trace import _files
from stepfork.trace.bundle import Trace, read_trace
from stepfork.trace.canonical import fingerprint
from stepfork.trace.errors import TraceError, TraceStorageError
from stepfork.trace.integrity import verify_bundle_integrity
from stepfork.trace.models import HASHED_FIELDS, EventBase, EventType, IntegrityStatus, RunStatus

UNREADABLE_CODES = frozenset(
    {
        "missing_file",
        "invalid_json",
        "invalid_manifest",
        "invalid_event",
        "unsupported_schema",
        "integrity_metadata_invalid",
        "integrity_algorithm_unsupported",
    }
)
"""Codes that make ``stepfork validate`` exit 2 (notes 4, exit codes)."""

TORN_FINAL_LINE = "torn_final_line"
"""Warning (partial mode, manifest ``running``): events.jsonl ends in a line a killed recorder was writing."""

RUN_INCOMPLETE = "run_incomplete"
"""Warning (both modes): a ``running`` manifest whose totals were never written and no run_end."""

STRICT_CODES = frozenset(
    {
        "run_start_count",
        "missing_error_event",
        "step_mismatch",
        "run_end_position",
        "unpaired_call",
        "unpaired_result",
        "status_mismatch",
        "failure_step",
    }
)
_ID_CODES = frozenset(
    {"run_id_mismatch", "duplicate_event_id", "step_order", "invalid_parent", "parent_not_earlier"}
)
_COUNT_CODES = frozenset({"event_count_mismatch", "totals_mismatch"})
_INTEGRITY_CODES = frozenset(
    {
        "integrity_unverified",
        "integrity_metadata_invalid",
        "integrity_algorithm_unsupported",
        "integrity_mismatch",
        "payload_hash_mismatch",
    }
)

CHECK_MANIFEST = "Manifest structure valid"
CHECK_EVENTS = "Event payloads parse"
CHECK_IDS = "Run IDs consistent"
CHECK_COUNT = "Event count matches"
CHECK_STRICT = "Strict execution checks"
CHECK_INTEGRITY = "Integrity verified"


@dataclass(frozen=True)
class ValidationIssue:
    """One problem: its ``code``, a message, and where (event id, step, ``file[:line|:field]`` location)."""

    code: str
    message: str
    event_id: str | None = None
    step: int | None = None
    location: str | None = None


@dataclass(frozen=True)
class ValidationCheck:
    """One line of ``stepfork validate`` output (spec cli-reference.txt, validate): its name and outcome."""

    name: str
    passed: bool


@dataclass(frozen=True)
class ValidationResult:
    """The verdict on a trace or bundle.

    Attributes:
        issues: the problems found, in check order; the trace is valid exactly when there are none.
        warnings: findings that do not fail validation (see the module docstring).
        integrity: the bundle integrity status when it was verified, else None.
        checks: the checks that ran, in the order the CLI prints them; strict checks appear only in strict
            mode, the integrity check only when requested.
        incomplete: the manifest says ``running`` and there is no run_end: a recording still going or
            interrupted (then a missing integrity.json is expected, not a legacy bundle).
    """

    issues: list[ValidationIssue] = field(default_factory=list)
    warnings: list[ValidationIssue] = field(default_factory=list)
    integrity: IntegrityStatus | None = None
    checks: list[ValidationCheck] = field(default_factory=list)
    incomplete: bool = False

    @property
    def valid(self) -> bool:
        """True when there is no issue (recomputed, never stored)."""
        return not self.issues

    @property
    def unreadable(self) -> bool:
        """True when an issue means the bundle cannot be read or trusted at all (exit 2)."""
        return any(issue.code in UNREADABLE_CODES for issue in self.issues)

    @property
    def legacy(self) -> bool:
        """True when integrity was requested and the bundle has no integrity.json (exit 3, checked first)."""
        return self.integrity == IntegrityStatus.UNVERIFIED_LEGACY

    @property
    def codes(self) -> list[str]:
        """The issue codes, in order (duplicates kept)."""
        return [issue.code for issue in self.issues]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: valid, unreadable, legacy, incomplete, integrity, issues, warnings, checks."""
        return {
            "valid": self.valid,
            "unreadable": self.unreadable,
            "legacy": self.legacy,
            "incomplete": self.incomplete,
            "integrity": None if self.integrity is None else self.integrity.value,
            "issues": [asdict(issue) for issue in self.issues],
            "warnings": [asdict(issue) for issue in self.warnings],
            "checks": [asdict(check) for check in self.checks],
        }


def _checks(issues: list[ValidationIssue], *, strict: bool, integrity: bool) -> list[ValidationCheck]:
    codes = {issue.code for issue in issues}
    checks = [
        ValidationCheck(CHECK_MANIFEST, "invalid_manifest" not in codes),
        ValidationCheck(CHECK_EVENTS, True),
        ValidationCheck(CHECK_IDS, not codes & _ID_CODES),
        ValidationCheck(CHECK_COUNT, not codes & _COUNT_CODES),
    ]
    if strict:
        checks.append(ValidationCheck(CHECK_STRICT, not codes & STRICT_CODES))
    if integrity:
        checks.append(ValidationCheck(CHECK_INTEGRITY, not codes & (_INTEGRITY_CODES | {"missing_file"})))
    return checks


def validate_trace(
    trace: Trace, *, strict: bool = True, verify_payload_hashes: bool = False
) -> ValidationResult:
    """Validate an in-memory ``trace`` (notes 4 plus notes 9 item 5); never raises for trace content.

    ``strict=False`` (``--partial``) skips the strict-only codes and, while the manifest says ``running``,
    the totals (a killed recorder leaves them at 0). ``verify_payload_hashes`` checks each event's
    input_hash/output_hash against the fingerprint of its payload (notes 2.2).
    """
    issues: list[ValidationIssue] = []
    warnings: list[ValidationIssue] = []
    try:
        trace.manifest  # noqa: B018 - validates status against failure
    except ValidationError as exc:
        issues.append(ValidationIssue("invalid_manifest", f"manifest: {exc.errors()[0]['msg']}"))
    events: list[EventBase] = list(trace.events)
    issues += _structure(trace, events)
    if strict or trace.status != RunStatus.RUNNING:
        issues += _totals(trace, events)
    if strict:
        issues += _execution(trace, events, warnings)
    else:
        _status_warning(trace, events, warnings)
    if verify_payload_hashes:
        issues += _payload_hashes(events)
    # The recorder writes totals only when the run ends: a running manifest whose totals disagree with the
    # events is a recording still going or killed (a legacy writer's running bundle has its totals).
    incomplete = (
        trace.status == RunStatus.RUNNING
        and trace.totals.events != len(events)
        and not any(event.type == EventType.RUN_END for event in events)
    )
    if incomplete:
        warnings.append(
            _issue(
                RUN_INCOMPLETE,
                "the run never finished: its recording is still going or was interrupted (manifest status "
                "running, totals never written); validate it with --partial",
            )
        )
    return ValidationResult(
        issues=issues,
        warnings=warnings,
        checks=_checks(issues, strict=strict, integrity=verify_payload_hashes),
        incomplete=incomplete,
    )


def _issue(
    code: str, message: str, event: EventBase | None = None, location: str | None = None
) -> ValidationIssue:
    if event is None:
        return ValidationIssue(code, message, location=location)
    return ValidationIssue(code, message, event_id=event.id, step=event.step, location=location)


def _structure(trace: Trace, events: list[EventBase]) -> list[ValidationIssue]:
    issues: list[ValidationIssue] = []
    first_index: dict[str, int] = {}
    for index, event in enumerate(events):
        first_index.setdefault(event.id, index)
    seen: set[str] = set()
    previous_step: int | None = None
    for index, event in enumerate(events):
        if event.id in seen:
            issues.append(
                _issue("duplicate_event_id", f"event id {event.id!r} is used more than once", event)
            )
        seen.add(event.id)
        if event.run_id != trace.run_id:
            issues.append(
                _issue(
                    "run_id_mismatch", f"event run_id {event.run_id!r} differs from {trace.run_id!r}", event
                )
            )
        if previous_step is not None and event.step < previous_step:
            issues.append(_issue("step_order", f"step {event.step} comes after step {previous_step}", event))
        previous_step = event.step
        if event.parent_id is not None:
            parent = first_index.get(event.parent_id)
            if parent is None:
                issues.append(_issue("invalid_parent", f"parent {event.parent_id!r} is not an event", event))
            elif parent >= index:
                issues.append(
                    _issue("parent_not_earlier", f"parent {event.parent_id!r} is not earlier", event)
                )
    return issues


def _totals(trace: Trace, events: list[EventBase]) -> list[ValidationIssue]:
    issues: list[ValidationIssue] = []
    totals = trace.totals
    if totals.events != len(events):
        issues.append(
            _issue(
                "event_count_mismatch",
                f"totals.events is {totals.events}, events.jsonl has {len(events)}",
                location="manifest.json:totals.events",
            )
        )
    for name, kind in (("llm_calls", EventType.LLM_REQUEST), ("tool_calls", EventType.TOOL_CALL)):
        count = sum(1 for event in events if event.type == kind)
        if getattr(totals, name) != count:
            issues.append(
                _issue(
                    "totals_mismatch",
                    f"totals.{name} is {getattr(totals, name)}, events hold {count}",
                    location=f"manifest.json:totals.{name}",
                )
            )
    return issues


def _status_warning(trace: Trace, events: list[EventBase], warnings: list[ValidationIssue]) -> None:
    ends = [event for event in events if event.type == EventType.RUN_END]
    if ends and trace.status == RunStatus.RUNNING and ends[-1].run_status != RunStatus.RUNNING:  # type: ignore[attr-defined]
        warnings.append(
            _issue(
                "status_mismatch",
                f"manifest status is running but run_end says {ends[-1].run_status}",  # type: ignore[attr-defined]
                ends[-1],
                location="manifest.json:status",
            )
        )


def _execution(
    trace: Trace, events: list[EventBase], warnings: list[ValidationIssue]
) -> list[ValidationIssue]:
    issues: list[ValidationIssue] = []
    starts = sum(1 for event in events if event.type == EventType.RUN_START)
    if starts != 1:
        issues.append(_issue("run_start_count", f"expected exactly 1 run_start, found {starts}"))
    errors = [event for event in events if event.type == EventType.ERROR]
    if trace.status == RunStatus.FAILED and not errors:
        issues.append(_issue("missing_error_event", "the run failed but has no error event"))
    if trace.failure is not None and not any(event.step == trace.failure.step for event in errors):
        issues.append(
            _issue(
                "failure_step",
                f"failure.step {trace.failure.step} is not the step of an error event",
                location="manifest.json:failure.step",
            )
        )
    for index, event in enumerate(events):
        if event.step != index:
            issues.append(
                _issue("step_mismatch", f"step {event.step} at line {index + 1} (expected {index})", event)
            )
    ends = [(index, event) for index, event in enumerate(events) if event.type == EventType.RUN_END]
    for index, event in ends:
        if index != len(events) - 1 or len(ends) > 1:
            issues.append(_issue("run_end_position", "run_end must be the last event and unique", event))
    ended = bool(ends) or trace.status != RunStatus.RUNNING
    if not ends and trace.status != RunStatus.RUNNING:
        issues.append(_issue("run_end_position", f"the run is {trace.status.value} but has no run_end"))
    if ends:
        run_status = ends[-1][1].run_status  # type: ignore[attr-defined]
        if trace.status != RunStatus.RUNNING and run_status != trace.status:
            issues.append(
                _issue(
                    "status_mismatch",
                    f"manifest status {trace.status.value} but run_end says {run_status.value}",
                    ends[-1][1],
                    location="manifest.json:status",
                )
            )
    _status_warning(trace, events, warnings)
    issues += _pairing(events, ended=ended)
    return issues


_RESULT_OF = {EventType.TOOL_RESULT: EventType.TOOL_CALL, EventType.LLM_RESPONSE: EventType.LLM_REQUEST}


def _same_call(call: EventBase, result: EventBase) -> bool:
    if result.type == EventType.TOOL_RESULT:
        return bool(call.name == result.name)  # type: ignore[attr-defined]
    model = result.model  # type: ignore[attr-defined]
    return model is None or bool(call.model == model)  # type: ignore[attr-defined]


def _pairing(events: list[EventBase], *, ended: bool) -> list[ValidationIssue]:
    """Pair each result with its call: by parent, else the nearest earlier unpaired call of that name.

    An error event whose parent is an unpaired call closes it (a failed LLM request has no response,
    notes 1.5). Calls left open are reported only when the run ended: a killed recorder leaves calls open.
    """
    issues: list[ValidationIssue] = []
    pending: dict[str, EventBase] = {}  # insertion order = recording order
    for event in events:
        if event.type in (EventType.TOOL_CALL, EventType.LLM_REQUEST):
            pending.setdefault(event.id, event)
        elif event.type == EventType.ERROR:
            if event.parent_id in pending:
                del pending[event.parent_id]
        elif event.type in _RESULT_OF:
            kind = _RESULT_OF[event.type]
            call = pending.get(event.parent_id or "")
            if call is None or call.type != kind or not _same_call(call, event):
                call = next(
                    (c for c in reversed(pending.values()) if c.type == kind and _same_call(c, event)), None
                )
            if call is None:
                issues.append(
                    _issue("unpaired_result", f"{event.type.value} has no matching open call", event)
                )
            else:
                del pending[call.id]
    if ended:
        for call in pending.values():
            issues.append(_issue("unpaired_call", f"{call.type.value} never got a result", call))
    return issues


def _payload_hashes(events: list[EventBase]) -> list[ValidationIssue]:
    issues: list[ValidationIssue] = []
    for event in events:
        for field_name, hash_name in zip(
            HASHED_FIELDS[event.type], ("input_hash", "output_hash"), strict=True
        ):
            if field_name is None:
                continue
            stored = getattr(event, hash_name)
            location = f"events.jsonl:{hash_name}"
            if stored is None:
                issues.append(_issue("integrity_unverified", f"{hash_name} is null", event, location))
                continue
            try:
                actual = fingerprint(getattr(event, field_name))
            except TraceError as exc:
                actual = f"<{exc.code}>"
            if actual != stored:
                issues.append(
                    _issue(
                        "payload_hash_mismatch",
                        f"{hash_name} does not match the {field_name} payload",
                        event,
                        location,
                    )
                )
    return issues


def validate_bundle(
    path: str | os.PathLike[str], *, strict: bool = True, verify_integrity: bool = False
) -> ValidationResult:
    """Load and validate the bundle at ``path``; never raises for bundle content (notes 4).

    A missing directory or required file gives only ``missing_file`` issues; any other load error gives
    one issue with the loader's code. ``verify_integrity`` checks integrity.json (computed before loading,
    so ``legacy`` is known even for an unreadable bundle) and the per-event payload hashes; when the
    integrity status is not ``verified`` its issues are appended.
    """
    bundle = Path(path)
    integrity = verify_bundle_integrity(bundle) if verify_integrity else None
    status = None if integrity is None else integrity.status
    integrity_issues: list[ValidationIssue] = []
    if integrity is not None and integrity.status != IntegrityStatus.VERIFIED:
        integrity_issues = [ValidationIssue(i.code, i.message, location=i.file) for i in integrity.issues]
    missing = _missing_files(bundle)
    if missing:
        checks = [ValidationCheck(CHECK_MANIFEST, False)]
        return ValidationResult(issues=missing, integrity=status, checks=checks)
    try:
        trace, torn = read_trace(bundle, torn_tail_ok=not strict)
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
    result = validate_trace(trace, strict=strict, verify_payload_hashes=verify_integrity)
    issues = [*result.issues, *integrity_issues]
    if torn is not None:  # partial mode, running bundle: a write cut by a crash, not a damaged bundle
        message = f"events.jsonl:{torn}: final line cut by a crash (no trailing newline); not read"
        result.warnings.append(ValidationIssue(TORN_FINAL_LINE, message, location=f"events.jsonl:{torn}"))
    return ValidationResult(
        issues=issues,
        warnings=result.warnings,
        integrity=status,
        checks=_checks(issues, strict=strict, integrity=verify_integrity),
        incomplete=result.incomplete,
    )


def _missing_files(bundle: Path) -> list[ValidationIssue]:
    if not bundle.is_dir():
        return [ValidationIssue("missing_file", _files.not_a_bundle(bundle), location=str(bundle))]
    return [
        ValidationIssue("missing_file", f"missing required file {name}", location=name)
        for name in _files.PAYLOAD_FILES
        if not (bundle / name).exists() and not (bundle / name).is_symlink()
    ]
