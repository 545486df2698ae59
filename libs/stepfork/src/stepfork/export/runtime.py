"""``stepfork.export.runtime``: the earlier implementation's path of the exported test's body (issue 32).

``run_regression_case`` is :func:`stepfork.replay.regression.run_regression_case` (one implementation): it
replays the bundle, runs the entrypoint and raises ``AssertionError`` when the behaviour differs from the
expectation (hybrid-replay.txt; REFERENCE-API.md ``stepfork.export``).

``_preview`` (a one-line preview of a JSON value, as the failure messages cut values) was a private helper
of that module that code written against it imported; it is :func:`stepfork.replay.diagnostics.preview`,
whose cut is marked ``...`` (docs/decisions.md).
"""

from stepfork.replay.diagnostics import preview as _preview  # noqa: F401 - the earlier private name, kept
from stepfork.replay.regression import run_regression_case

__all__ = ["run_regression_case"]
