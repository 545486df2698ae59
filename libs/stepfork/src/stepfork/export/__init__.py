"""Pytest export: ``generate_pytest_source``, ``export_pytest_test``, ``run_regression_case``.

A re-export of :mod:`stepfork.analysis.export`, kept at ``stepfork.export`` as the spec names it
(hybrid-replay.txt; interop/REFERENCE-API.md). A package, so that the earlier implementation's submodule
paths keep working (issue 32): :mod:`stepfork.export.generator` (writing the test),
:mod:`stepfork.export.runtime` (the test's body) and :mod:`stepfork.export.entrypoint` (resolving
``MODULE:FUNCTION``) hold the same objects.
"""

from stepfork.analysis.export import *  # noqa: F403
from stepfork.analysis.export import __all__ as __all__
