"""The output comparison of replay, exported tests, ``check`` and ``minimize``, in replay's report types.

:func:`output_differences` runs :func:`stepfork.replay.noise.compare_output` and returns its differences as
:class:`~stepfork.replay.diagnostics.JsonDifference` (JSONPath ``$.a[0]``, ``MISSING`` for an absent side),
the real ones apart from those accepted as noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepfork.replay.diagnostics import DIFFERENCE_LIMIT, MISSING, JsonDifference
from stepfork.replay.noise import ABSENT, Difference, Origins, compare_output
from stepfork.trace.canonical import json_path_child


def json_path(parts: tuple[str | int, ...]) -> str:
    """The JSONPath of a difference's path parts (``$``, ``$.a.b[1]``, ``$["a b"]``)."""
    path = "$"
    for key in parts:
        path = json_path_child(path, key)
    return path


def as_json_difference(found: Difference) -> JsonDifference:
    """One :class:`Difference` as a :class:`JsonDifference` (its ``noise`` kept)."""
    expected = MISSING if found.expected is ABSENT else found.expected
    actual = MISSING if found.actual is ABSENT else found.actual
    return JsonDifference(json_path(found.path), expected, actual, found.noise)


@dataclass(frozen=True, slots=True)
class OutputDifferences:
    """``differences`` (the first ``limit`` real ones) and ``count`` (all real ones); ``ignored`` and
    ``ignored_count`` the same for the differences accepted as noise."""

    differences: tuple[JsonDifference, ...]
    count: int
    ignored: tuple[JsonDifference, ...]
    ignored_count: int

    @property
    def first(self) -> JsonDifference | None:
        """The first real difference, or None when the outputs are equal up to noise."""
        return self.differences[0] if self.differences else None


def output_differences(
    expected: Any, actual: Any, origins: Origins | None = None, *, limit: int = DIFFERENCE_LIMIT
) -> OutputDifferences:
    """Compare an output with the expected one up to noise (:func:`stepfork.replay.noise.compare_output`:
    fresh ids renamed, framework-message timing fields and new fields). ``origins``: the recording's ids
    (an id it handed out must match exactly); None: every id is fresh."""
    found = compare_output(expected, actual, origins)
    real = [d for d in found if d.noise is None]
    noise = [d for d in found if d.noise is not None]
    return OutputDifferences(
        tuple(as_json_difference(d) for d in real[:limit]),
        len(real),
        tuple(as_json_difference(d) for d in noise[:limit]),
        len(noise),
    )
