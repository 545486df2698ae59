"""The verdict of validation: issue codes, check names, and the result types (docs/format.md "Validation").

Split from ``stepfork.trace.validation``, which re-exports every public name here; the meaning of each code
and the module docstring there are the reference (interop/REFERENCE-NOTES.md section 4).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from stepfork.trace._format import IntegrityStatus

UNREADABLE_CODES = frozenset(
    {
        "missing_file",
        "invalid_json",
        "invalid_manifest",
        "invalid_event",
        "unsupported_schema",
        "integrity_metadata_invalid",
        "integrity_algorithm_unsupported",
        # a bundle URL (stepfork.trace.remote): an unfinished upload, no fsspec, a bad URL
        "incomplete_bundle",
        "remote_support_missing",
        "invalid_path",
    }
)
"""Codes that make ``stepfork validate`` exit 2 (notes 4, exit codes)."""

TORN_FINAL_LINE = "torn_final_line"
"""Warning (partial mode, manifest ``running``): events.jsonl ends in a line a killed recorder was writing."""

RUN_INCOMPLETE = "run_incomplete"
"""Warning (both modes): a ``running`` manifest whose totals were never written and no run_end."""

TIMESTAMP_ORDER = "timestamp_order"
"""Warning (both modes): an event's timestamp is earlier than that of an event on an earlier line."""

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
        warnings: findings that do not fail validation (see ``stepfork.trace.validation``).
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


def checks_for(issues: list[ValidationIssue], *, strict: bool, integrity: bool) -> list[ValidationCheck]:
    """The checks ``stepfork validate`` prints for ``issues``, in order: the four common checks, then the
    strict check (``strict`` only) and the integrity check (``integrity`` only), each failed by its codes.
    """
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
