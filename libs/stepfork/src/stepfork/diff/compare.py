"""``stepfork.diff.compare``: the earlier implementation's module of the value comparisons (issue 32).

``values_equal``, ``first_difference`` and ``collect_field_changes`` at that path: the same functions as
:mod:`stepfork.diff` and :mod:`stepfork.analysis.diff`.
"""

from stepfork.analysis.diff import collect_field_changes, first_difference, values_equal

__all__ = ["collect_field_changes", "first_difference", "values_equal"]
