"""stepfork.analysis: diff, minimize, score, fork, inspection, pytest export and the runner with receipts.

One subpackage per capability, whose ``__init__`` is its public face and whose private modules live inside
it: ``diff``, ``minimize``, ``forking`` (``fork``), ``score``, ``export`` (code generation, ``run``,
receipts), ``check``, ``inspection``, ``otlp``, ``view`` (HTML views, notebook helpers); ``_shared`` holds
what several of them use, ``_zygote`` the process ``minimize`` and ``check`` fork replays from
(docs/architecture.md). ``pytest_reports`` is the ``pytest11`` entry point.

The names below are imported lazily (PEP 562) from the face that owns them, so ``import stepfork.analysis``
costs nothing; add a name with one line in ``_EXPORTS``.
"""

from __future__ import annotations

from typing import Any

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # export (code generation)
    "generate_pytest_source": "stepfork.analysis.export",
    "export_pytest_test": "stepfork.analysis.export",
    "read_exported_constants": "stepfork.analysis.export",
    "ExportError": "stepfork.analysis.export",
    "ExportExistsError": "stepfork.analysis.export",
    "ExportResult": "stepfork.analysis.export",
    # run + receipts
    "run_exported_test": "stepfork.analysis.export",
    "RunInputError": "stepfork.analysis.export",
    "Receipt": "stepfork.analysis.export",
    # diff, score, minimize, fork (issue 5)
    "diff_traces": "stepfork.analysis.diff",
    "DiffResult": "stepfork.analysis.diff",
    "StepDiff": "stepfork.analysis.diff",
    "TraceSummary": "stepfork.analysis.diff",
    "BehaviorStep": "stepfork.analysis.diff",
    "FieldChange": "stepfork.analysis.diff",
    "extract_behavior": "stepfork.analysis.diff",
    "first_difference": "stepfork.analysis.diff",
    "values_equal": "stepfork.analysis.diff",
    "score_test": "stepfork.analysis.score",
    "ScoreResult": "stepfork.analysis.score",
    "ScoreError": "stepfork.analysis.score",
    "minimize_trace": "stepfork.analysis.minimize",
    "MinimizeResult": "stepfork.analysis.minimize",
    "MinimizeError": "stepfork.analysis.minimize",
    "fork": "stepfork.analysis.forking",
    "ForkResult": "stepfork.analysis.forking",
    "ForkError": "stepfork.analysis.forking",
    # inspection (issue 32): what `stepfork inspect` renders
    "inspect_bundle": "stepfork.analysis.inspection",
    "inspect_trace": "stepfork.analysis.inspection",
    "TraceInspection": "stepfork.analysis.inspection",
    "EventSummary": "stepfork.analysis.inspection",
    # notebooks (issue 16): pandas DataFrames, behind the `notebook` extra
    "events_df": "stepfork.analysis.view.dataframes",
    "runs_df": "stepfork.analysis.view.dataframes",
    # check a corpus (issue 17)
    "check_corpus": "stepfork.analysis.check",
    "resolve_corpus": "stepfork.analysis.check",
    "CheckResult": "stepfork.analysis.check",
    "BundleVerdict": "stepfork.analysis.check",
    "CorpusError": "stepfork.analysis.check",
    "run_many": "stepfork.analysis.export",
    "RunSummary": "stepfork.analysis.export",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name on first use; AttributeError for unknown names."""
    try:
        module_name = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'stepfork.analysis' has no attribute {name!r}") from None
    from importlib import import_module

    value = getattr(import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
