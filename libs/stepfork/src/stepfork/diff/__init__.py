"""``stepfork.diff``: the reference's module path for behaviour diffs (REFERENCE-API.md ``stepfork.diff``).

The same objects as :mod:`stepfork.analysis.diff` (one implementation each; issue 14). ``DiffResult``,
``StepDiff``, ``FieldChange`` and ``TraceSummary`` are pydantic models; the differences from the reference
are listed in docs/decisions.md.
"""

from stepfork.analysis.diff import (
    BehaviorStep,
    ChangeKind,
    DiffResult,
    FieldChange,
    StepDiff,
    TraceSummary,
    collect_field_changes,
    diff_traces,
    extract_behavior,
    first_difference,
    values_equal,
)

__all__ = [
    "BehaviorStep",
    "ChangeKind",
    "DiffResult",
    "FieldChange",
    "StepDiff",
    "TraceSummary",
    "collect_field_changes",
    "diff_traces",
    "extract_behavior",
    "first_difference",
    "values_equal",
]
