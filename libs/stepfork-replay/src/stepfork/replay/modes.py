"""Replay modes and the validation of their options (spec replay.txt "Modes", hybrid-replay.txt;
interop/REFERENCE-NOTES.md section 6, "Constructor rules").

| mode | behaviour |
|---|---|
| ``frozen`` | serve every call from the recording; never run a dependency body |
| ``hybrid`` | run the LLMs named in ``live_llms`` again; everything else frozen (Python API only) |
| ``live`` | match, then run LLMs; run a tool only when its name is in ``allow_live_tools`` |
| ``forbidden`` | refuse every dependency call |
| ``manual`` | each call needs ``approve(call) -> True``; approved calls are matched and served frozen |
| ``derived`` | reserved, not supported: rejected with ValueError, never a silent frozen run |
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from stepfork.replay.plan import RecordedCall
from stepfork.trace.boundary import BoundaryCall

MODES = ("frozen", "hybrid", "live", "forbidden", "manual")
"""The supported modes; ``derived`` is reserved (spec: "Reserved; not supported in v0.1")."""

Approver = Callable[[BoundaryCall], bool]
"""``approve(call) -> bool`` for manual mode; ``call.input`` is the redacted live input."""


@dataclass(frozen=True, slots=True)
class ModeOptions:
    """Validated replay options.

    Attributes:
        mode: one of :data:`MODES`.
        live_llms: LLM labels (``provider/model`` or ``model``) re-executed in hybrid mode.
        allow_live_tools: tool names executed in live mode (every occurrence of each name).
        approve: the manual-mode approval callback, or None.
    """

    mode: str
    live_llms: frozenset[str]
    allow_live_tools: frozenset[str]
    approve: Approver | None


def _names(value: Iterable[str] | str | None, option: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        raise ValueError(f"{option} must be a collection of names, not the string {value!r}")
    names = frozenset(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"{option} holds an empty or non-string name: {name!r}")
    return names


def normalize_mode(mode: Any) -> str:
    """Return the mode as a plain string (a ``ReplayPolicy`` member gives its value).

    Raises:
        ValueError: ``derived`` (reserved, not supported) or an unknown mode, naming the valid ones.
    """
    text = str(getattr(mode, "value", mode))
    if text == "derived":
        raise ValueError(
            "replay mode 'derived' is reserved and not supported in v0.1; use one of " + ", ".join(MODES)
        )
    if text not in MODES:
        raise ValueError(f"unknown replay mode {text!r}; expected one of " + ", ".join(MODES))
    return text


def validate_options(
    all_calls: Iterable[RecordedCall],
    mode: Any,
    *,
    live_llms: Iterable[str] | None = None,
    allow_live_tools: Iterable[str] | None = None,
    approve: Approver | None = None,
) -> ModeOptions:
    """Check a mode and its options against the recorded calls (all of them, hidden ones included).

    Raises:
        ValueError: unknown or reserved mode; ``hybrid`` without ``live_llms``; ``live_llms`` outside
            hybrid; ``allow_live_tools`` outside live; ``approve`` outside manual; a name or label that does
            not occur in the trace ("not found in trace"). Each message names the problem.
    """
    text = normalize_mode(mode)
    llms = _names(live_llms, "live_llms")
    tools = _names(allow_live_tools, "allow_live_tools")
    if text == "hybrid" and not llms:
        raise ValueError("mode='hybrid' requires explicit live_llms (labels of recorded LLM calls)")
    if llms and text != "hybrid":
        raise ValueError(f"live_llms is only valid with mode='hybrid', not mode={text!r}")
    if tools and text != "live":
        raise ValueError(f"allow_live_tools is only valid with mode='live', not mode={text!r}")
    if approve is not None and text != "manual":
        raise ValueError(f"approve is only valid with mode='manual', not mode={text!r}")
    if approve is not None and not callable(approve):
        raise ValueError("approve must be a callable taking the call and returning a bool")
    calls = list(all_calls)
    llm_labels = {call.label for call in calls if call.kind == "llm"}
    tool_names = {call.name for call in calls if call.kind == "tool"}
    unknown_llms = sorted(llms - llm_labels)
    if unknown_llms:
        raise ValueError(
            f"live_llms {unknown_llms} not found in trace; recorded LLM labels: {sorted(llm_labels)}"
        )
    unknown_tools = sorted(tools - tool_names)
    if unknown_tools:
        raise ValueError(
            f"allow_live_tools {unknown_tools} not found in trace; recorded tools: {sorted(tool_names)}"
        )
    return ModeOptions(text, llms, tools, approve)
