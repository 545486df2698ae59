"""Stepfork: record, replay and regression-test LLM agents.

This facade owns the ``stepfork`` namespace's ``__init__.py`` (the other distributions ship only their
subpackages) and re-exports the public API lazily (PEP 562), so ``import stepfork`` costs almost nothing
and ``import stepfork.trace`` never pulls in replay or analysis (docs/architecture.md).

Names from a distribution that is not installed raise an ``ImportError`` that says which one to install.
"""

from __future__ import annotations

import os as _os
import sys as _sys

# pkgutil.extend_path(__path__, __name__) without importing pkgutil, which pulls in typing and re (~14 ms,
# more than the interpreter's own start-up) on every `stepfork --version`: every `stepfork` directory on
# sys.path joins the namespace, so editable installs (one .pth per member) find every portion
# (docs/architecture.md, "Namespace").
__path__ = [
    *__path__,
    *(
        portion
        for portion in (_os.path.join(entry, __name__) for entry in _sys.path if isinstance(entry, str))
        if portion not in __path__ and _os.path.isdir(portion)
    ),
]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time

__version__ = "0.2.0"

# public name -> (module, distribution that ships it)
_EXPORTS: dict[str, tuple[str, str]] = {
    # stepfork-trace
    "record": ("stepfork.trace", "stepfork-trace"),
    "RecordingSession": ("stepfork.trace", "stepfork-trace"),
    "trace_tool": ("stepfork.trace", "stepfork-trace"),
    "llm_request": ("stepfork.trace", "stepfork-trace"),
    "allm_request": ("stepfork.trace", "stepfork-trace"),
    "LLMOutput": ("stepfork.trace", "stepfork-trace"),
    "Trace": ("stepfork.trace", "stepfork-trace"),
    "ToolCall": ("stepfork.trace", "stepfork-trace"),
    "FailureInfo": ("stepfork.trace", "stepfork-trace"),
    "validate_bundle": ("stepfork.trace", "stepfork-trace"),
    "canonical_json": ("stepfork.trace", "stepfork-trace"),
    "fingerprint": ("stepfork.trace", "stepfork-trace"),
    "register_secret": ("stepfork.trace", "stepfork-trace"),
    # stepfork-replay
    "ReplaySession": ("stepfork.replay", "stepfork-replay"),
    "ReplayError": ("stepfork.replay", "stepfork-replay"),
    "ReplayMismatchError": ("stepfork.replay", "stepfork-replay"),
    "ReplayExhaustedError": ("stepfork.replay", "stepfork-replay"),
    "ReplayPolicyError": ("stepfork.replay", "stepfork-replay"),
    "RecordedDependencyError": ("stepfork.replay", "stepfork-replay"),
    "run_regression_case": ("stepfork.replay", "stepfork-replay"),
    # stepfork-analysis
    "diff_traces": ("stepfork.analysis", "stepfork-analysis"),
}

__all__ = [
    "__version__",
    "FailureInfo",
    "LLMOutput",
    "RecordedDependencyError",
    "RecordingSession",
    "ReplayError",
    "ReplayExhaustedError",
    "ReplayMismatchError",
    "ReplayPolicyError",
    "ReplaySession",
    "ToolCall",
    "Trace",
    "allm_request",
    "canonical_json",
    "diff_traces",
    "fingerprint",
    "llm_request",
    "record",
    "register_secret",
    "run_regression_case",
    "trace_tool",
    "validate_bundle",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from stepfork.analysis import diff_traces
    from stepfork.replay import (
        RecordedDependencyError,
        ReplayError,
        ReplayExhaustedError,
        ReplayMismatchError,
        ReplayPolicyError,
        ReplaySession,
        run_regression_case,
    )
    from stepfork.trace import (
        FailureInfo,
        LLMOutput,
        RecordingSession,
        ToolCall,
        Trace,
        allm_request,
        canonical_json,
        fingerprint,
        llm_request,
        record,
        register_secret,
        trace_tool,
        validate_bundle,
    )


def __getattr__(name: str) -> object:
    """Import a public name on first use (PEP 562).

    Raises:
        AttributeError: ``name`` is not a public Stepfork name.
        ImportError: the distribution that ships ``name`` is not installed; the message names it.
    """
    try:
        module_name, distribution = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'stepfork' has no attribute {name!r}") from None
    from importlib import import_module

    try:
        module = import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise ImportError(
                f"stepfork.{name} needs the {distribution} distribution: pip install {distribution}"
            ) from exc
        raise
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
