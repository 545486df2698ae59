"""The verdict of validation: the result types, with the issue codes and check names (docs/format.md
"Validation").

Split from ``stepfork.trace.validation``, which re-exports every public name here; the meaning of each code
and the module docstring there are the reference (interop/REFERENCE-NOTES.md section 4). The codes and check
names live in :mod:`stepfork.trace._validation_codes` (re-exported here), which imports nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from stepfork.trace._format import IntegrityStatus
from stepfork.trace._validation_codes import CHECK_COUNT as CHECK_COUNT
from stepfork.trace._validation_codes import CHECK_EVENTS as CHECK_EVENTS
from stepfork.trace._validation_codes import CHECK_IDS as CHECK_IDS
from stepfork.trace._validation_codes import CHECK_INTEGRITY as CHECK_INTEGRITY
from stepfork.trace._validation_codes import CHECK_MANIFEST as CHECK_MANIFEST
from stepfork.trace._validation_codes import CHECK_STRICT as CHECK_STRICT
from stepfork.trace._validation_codes import FAILED_BY, check_names
from stepfork.trace._validation_codes import RUN_INCOMPLETE as RUN_INCOMPLETE
from stepfork.trace._validation_codes import STRICT_CODES as STRICT_CODES
from stepfork.trace._validation_codes import TIMESTAMP_ORDER as TIMESTAMP_ORDER
from stepfork.trace._validation_codes import TORN_FINAL_LINE as TORN_FINAL_LINE
from stepfork.trace._validation_codes import UNREADABLE_CODES as UNREADABLE_CODES


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
    return [
        ValidationCheck(name, not codes & FAILED_BY[name])
        for name in check_names(strict=strict, integrity=integrity)
    ]
