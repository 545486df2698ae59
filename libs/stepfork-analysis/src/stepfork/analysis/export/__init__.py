"""``stepfork.analysis.export``: an exported regression test, from its generation to its receipt.

- Generation (spec "export"): :func:`generate_pytest_source` / :func:`export_pytest_test` write a pytest
  module holding the bundle's data only as literals, checked with ``ast`` before it is written; the
  facade's :mod:`stepfork.export` re-exports these names (and ``EntrypointError``, ``resolve_entrypoint``,
  ``run_regression_case``, imported from :mod:`stepfork.replay` on first use, as the spec's
  hybrid-replay.txt says they are importable from there).
- Reading it back without importing it: :func:`read_exported_constants` and the checks ``export`` and
  ``run`` share (:func:`entrypoint_form_problem`, :func:`check_raise_as`, :func:`command_secret_problem`).
- Running it (spec "run"): :func:`run_exported_test` runs one test in a pytest subprocess and writes its
  :class:`Receipt`; :func:`run_many` runs several, sharded (``--shard K/N``).

Private modules: ``_codegen`` (the generated source), ``_checks`` (what export refuses), ``_files`` (its
inputs and the atomic write), ``_call`` (the entrypoint's call checked against the recorded input),
``_script`` (the form of a program's test), ``_exported`` (reading the constants back), ``_runner``,
``_locate``, ``_pytest_outcome`` (one run), ``_receipt``, ``_run_many``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepfork.analysis.export._codegen import (
    EXPORT_MODES,
    REFUSED_EXPORT_MODES,
    default_output_path,
    export_pytest_test,
    generate_pytest_source,
)
from stepfork.analysis.export._exported import (
    CONSTANT_NAMES,
    check_raise_as,
    command_secret_problem,
    entrypoint_form_problem,
    read_exported_constants,
)
from stepfork.analysis.export._files import (
    ExportError,
    ExportExistsError,
    ExportResult,
    load_expectation_file,
    load_trajectory_file,
)
from stepfork.analysis.export._receipt import REASONS, Receipt, is_receipt_file, receipt_target_problem
from stepfork.analysis.export._run_many import RunSummary, collect_tests, parse_shard, run_many, shard_of
from stepfork.analysis.export._runner import RunInputError, resolve_entrypoint_location, run_exported_test

if TYPE_CHECKING:  # pragma: no cover - re-exported lazily by __getattr__ below
    from stepfork.replay.entrypoint import EntrypointError, resolve_entrypoint
    from stepfork.replay.regression import run_regression_case

__all__ = [
    "CONSTANT_NAMES",
    "EXPORT_MODES",
    "REFUSED_EXPORT_MODES",
    "REASONS",
    "EntrypointError",
    "ExportError",
    "ExportExistsError",
    "ExportResult",
    "Receipt",
    "RunInputError",
    "RunSummary",
    "check_raise_as",
    "collect_tests",
    "command_secret_problem",
    "default_output_path",
    "entrypoint_form_problem",
    "export_pytest_test",
    "generate_pytest_source",
    "is_receipt_file",
    "load_expectation_file",
    "load_trajectory_file",
    "parse_shard",
    "read_exported_constants",
    "receipt_target_problem",
    "resolve_entrypoint",
    "resolve_entrypoint_location",
    "run_exported_test",
    "run_many",
    "run_regression_case",
    "shard_of",
]

# Re-exported from stepfork.replay lazily (PEP 562), so reading constants never imports the replay stack.
_REPLAY_NAMES = {
    "EntrypointError": "stepfork.replay.entrypoint",
    "resolve_entrypoint": "stepfork.replay.entrypoint",
    "run_regression_case": "stepfork.replay.regression",
}


def __getattr__(name: str) -> Any:
    """Return a replay name re-exported here (spec hybrid-replay.txt: importable from stepfork.export).

    Raises:
        AttributeError: ``name`` is not one of them.
    """
    if name in _REPLAY_NAMES:
        from importlib import import_module

        return getattr(import_module(_REPLAY_NAMES[name]), name)
    raise AttributeError(f"module 'stepfork.analysis.export' has no attribute {name!r}")
