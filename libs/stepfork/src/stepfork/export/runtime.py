"""``stepfork.export.runtime``: the earlier implementation's path of the exported test's body (issue 32).

``run_regression_case`` is :func:`stepfork.replay.regression.run_regression_case` (one implementation): it
replays the bundle, runs the entrypoint and raises ``AssertionError`` when the behaviour differs from the
expectation (hybrid-replay.txt; REFERENCE-API.md ``stepfork.export``).
"""

from stepfork.replay.regression import run_regression_case

__all__ = ["run_regression_case"]
