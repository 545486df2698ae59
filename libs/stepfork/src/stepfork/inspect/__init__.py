"""``stepfork.inspect``: a bundle's run summary and timeline as a library API (issue 32).

The earlier implementation's module (interop/REFERENCE-API.md): ``inspect_bundle(path)`` returns a
``TraceInspection`` (``agent_name``, ``status``, ``events``, ``integrity``, ``timeline`` of
``EventSummary``..., ``model_dump_json()``); ``inspect_trace(trace)`` inspects an in-memory ``Trace``;
``filter_timeline(inspection, errors_only=..., step=...)`` narrows the timeline. The same objects as
:mod:`stepfork.analysis.inspection` (what ``stepfork inspect`` renders), imported on first use (PEP 562), so
``import stepfork.inspect`` costs nothing until a name is used. The submodules ``stepfork.inspect.inspector``
and ``stepfork.inspect.models`` keep the earlier paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from stepfork.analysis.inspection import (
        EventSummary,
        TraceInspection,
        filter_timeline,
        inspect_bundle,
        inspect_trace,
    )

__all__ = ["EventSummary", "TraceInspection", "filter_timeline", "inspect_bundle", "inspect_trace"]


def __getattr__(name: str) -> Any:
    """Import a public name from :mod:`stepfork.analysis.inspection` on first use.

    Raises:
        AttributeError: ``name`` is not one of :data:`__all__`.
    """
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from stepfork.analysis import inspection

    value = getattr(inspection, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
