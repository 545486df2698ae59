"""``stepfork.diff.models``: the earlier implementation's module of the diff models (issue 32).

``FieldChange``, ``StepDiff``, ``TraceSummary`` and ``DiffResult`` at that path: the same classes as
:mod:`stepfork.diff`.
"""

from stepfork.analysis.diff import DiffResult, FieldChange, StepDiff, TraceSummary

__all__ = ["DiffResult", "FieldChange", "StepDiff", "TraceSummary"]
