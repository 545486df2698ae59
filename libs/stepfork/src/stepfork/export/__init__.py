"""Pytest export: ``generate_pytest_source``, ``export_pytest_test``, ``run_regression_case``.

A re-export of the generation part of :mod:`stepfork.analysis.export` (the names that module had before it
became a package holding ``stepfork run`` too), kept at ``stepfork.export`` as the spec names it
(hybrid-replay.txt; interop/REFERENCE-API.md). A package, so that the earlier implementation's submodule
paths keep working (issue 32): :mod:`stepfork.export.generator` (writing the test),
:mod:`stepfork.export.runtime` (the test's body) and :mod:`stepfork.export.entrypoint` (resolving
``MODULE:FUNCTION``) hold the same objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepfork.analysis import export as _export
from stepfork.analysis.export import (
    CONSTANT_NAMES,
    EXPORT_MODES,
    ExportError,
    ExportExistsError,
    ExportResult,
    default_output_path,
    export_pytest_test,
    generate_pytest_source,
    load_expectation_file,
    load_trajectory_file,
    read_exported_constants,
)

if TYPE_CHECKING:  # pragma: no cover - re-exported lazily by __getattr__ below
    from stepfork.analysis.export import EntrypointError, resolve_entrypoint, run_regression_case

__all__ = [
    "CONSTANT_NAMES",
    "EXPORT_MODES",
    "EntrypointError",
    "ExportError",
    "ExportExistsError",
    "ExportResult",
    "default_output_path",
    "export_pytest_test",
    "generate_pytest_source",
    "load_expectation_file",
    "load_trajectory_file",
    "read_exported_constants",
    "resolve_entrypoint",
    "run_regression_case",
]


def __getattr__(name: str) -> Any:
    """``EntrypointError``, ``resolve_entrypoint`` and ``run_regression_case``, from :mod:`stepfork.replay`
    on first use (as :mod:`stepfork.analysis.export` gives them).

    Raises:
        AttributeError: ``name`` is not one of them.
    """
    if name in __all__:
        return getattr(_export, name)
    raise AttributeError(f"module 'stepfork.export' has no attribute {name!r}")
