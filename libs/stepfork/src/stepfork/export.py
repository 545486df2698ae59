"""Pytest export: ``generate_pytest_source``, ``export_pytest_test``, ``run_regression_case``.

A re-export of :mod:`stepfork.analysis.export`, kept at ``stepfork.export`` as the spec names it
(hybrid-replay.txt; interop/REFERENCE-API.md).
"""

from stepfork.analysis.export import *  # noqa: F403
from stepfork.analysis.export import __all__ as __all__
