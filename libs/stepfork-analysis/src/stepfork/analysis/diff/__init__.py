"""``stepfork.analysis.diff``: compare the behaviour of two recorded runs (spec "diff"; issue 5).

:func:`diff_traces` aligns the two runs' behaviour steps (:func:`extract_behavior`) and compares them field
by field, noise left out by the rules of :mod:`stepfork.replay.noise` (docs/diff.md). The value comparison
(:func:`values_equal`, :func:`first_difference`, :func:`collect_field_changes`) is shared with ``score``.
The facade's :mod:`stepfork.diff` re-exports these names at the earlier implementation's paths.

Private modules: ``_compare`` (the alignment), ``_result`` (the result models and their renderings),
``_behavior`` (behaviour steps and the value comparison), ``_volatile`` (``--ignore`` patterns as noise
rules).
"""

from stepfork.analysis.diff._behavior import (
    BehaviorStep,
    ChangeKind,
    FieldChange,
    collect_field_changes,
    extract_behavior,
    first_difference,
    values_equal,
)
from stepfork.analysis.diff._compare import DiffResult, StepDiff, TraceSummary, diff_traces
from stepfork.analysis.diff._volatile import check_path_patterns, user_ignore

__all__ = [
    "BehaviorStep",
    "ChangeKind",
    "DiffResult",
    "FieldChange",
    "StepDiff",
    "TraceSummary",
    "check_path_patterns",
    "collect_field_changes",
    "diff_traces",
    "extract_behavior",
    "first_difference",
    "user_ignore",
    "values_equal",
]
