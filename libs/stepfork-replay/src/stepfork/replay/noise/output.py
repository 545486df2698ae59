"""The output comparison of replay, exported tests, ``check`` and ``minimize``, in replay's report types.

:func:`output_differences` runs :func:`stepfork.replay.noise.compare_output` and returns its differences as
:class:`~stepfork.replay.diagnostics.JsonDifference` (JSONPath ``$.a[0]``, ``MISSING`` for an absent side),
the real ones apart from those accepted as noise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from stepfork.replay.diagnostics import DIFFERENCE_LIMIT, MISSING, JsonDifference
from stepfork.replay.ignoring import compile_path_pattern
from stepfork.replay.noise import ABSENT, Comparison, Difference, Origins, compare_output
from stepfork.trace.canonical import json_path_child

IGNORED = "--ignore"
"""The ``noise`` of an output difference at a path the user ignored."""


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
    return JsonDifference(json_path(found.path), expected, actual, found.noise, found.at)


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
    expected: Any,
    actual: Any,
    origins: Origins | None = None,
    *,
    live: Origins | None = None,
    exact: bool = False,
    ignore: Iterable[str] | None = (),
    limit: int = DIFFERENCE_LIMIT,
    scope: Comparison | None = None,
) -> OutputDifferences:
    """Compare an output with the expected one up to noise (:func:`stepfork.replay.noise.compare_output`:
    fresh values renamed, framework-message timing fields and new fields).

    Args:
        origins: the recording's (an id it handed out must match exactly); None: no recording.
        live: the replay's side (``Origins(trace, minted=session.minted)``); None: ``origins``.
        exact: a reviewed expectation: compared exactly, but for ``ignore``.
        ignore: JSON paths of the output not compared (``$.generated_at``, ``$.items[*].id``; ``--ignore``
            of ``replay`` and ``export``): a difference there is reported as ignored (``--ignore``).
        scope: the replay's comparison to continue (``ReplaySession.output_scope``: the renaming its input
            matching made); None: a new one.
    """
    found = compare_output(expected, actual, origins, live=live, exact=exact, scope=scope)
    patterns = [compile_path_pattern(path) for path in ignore or ()]
    if patterns:
        found = [
            replace(d, noise=IGNORED)
            if d.noise is None and any(p.fullmatch(json_path(d.path)) for p in patterns)
            else d
            for d in found
        ]
    real = [d for d in found if d.noise is None]
    noise = [d for d in found if d.noise is not None]
    return OutputDifferences(
        tuple(as_json_difference(d) for d in real[:limit]),
        len(real),
        tuple(as_json_difference(d) for d in noise[:limit]),
        len(noise),
    )
