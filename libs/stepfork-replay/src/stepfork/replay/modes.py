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

The policy checks of a replayed call live here too (checks 2, 6 and 8 of
:mod:`stepfork.replay.session_calls`): :func:`check_mode`, :func:`check_call_policy`, :func:`check_live_tool`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from stepfork.replay.errors import ReplayPolicyError
from stepfork.replay.matching import LiveInput, build_diagnostic
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


def check_mode(mode: str, approve: Approver | None, call: BoundaryCall, live: LiveInput) -> None:
    """Check 2 of a replayed call (stepfork.replay.session_calls), before any matching: the mode's own
    refusal.

    Raises:
        ReplayPolicyError: ``forbidden_mode`` in mode ``forbidden``; ``not_approved`` in mode ``manual``
            without an ``approve`` callback or when ``approve(call)`` (``call.input`` redacted) is not True.
    """
    if mode == "forbidden":
        raise ReplayPolicyError(
            f"mode 'forbidden' rejects every dependency call ({call.kind} {call.label!r})",
            code="forbidden_mode",
            diagnostic=build_diagnostic(None, call, live),
        )
    if mode != "manual":
        return
    if approve is None:
        raise ReplayPolicyError(
            f"mode 'manual' needs approval of each call (an approve(call) callback); {call.kind} "
            f"{call.label!r} not approved",
            code="not_approved",
            diagnostic=build_diagnostic(None, call, live),
        )
    if approve(replace(call, input=live.value)) is not True:
        raise ReplayPolicyError(
            f"{call.kind} call {call.label!r} was not approved (manual mode)",
            code="not_approved",
            diagnostic=build_diagnostic(None, call, live),
        )


def check_call_policy(mode: str, expected: RecordedCall, call: BoundaryCall, live: LiveInput) -> None:
    """Check 6: the recorded event's and the call site's ``replay_policy``.

    Raises:
        ReplayPolicyError: ``forbidden_policy`` for ``forbidden``; ``manual_policy`` for ``manual`` outside
            mode ``manual``. ``live``/``derived`` stored on an event read as frozen.
    """
    if expected.policy == "frozen" and call.replay_policy == "frozen":
        return  # the common case, without building the loop below
    for where, policy in (("recorded event", expected.policy), ("call site", call.replay_policy)):
        if policy == "forbidden" or (policy == "manual" and mode != "manual"):
            needs = " without approval (mode='manual')" if policy == "manual" else ""
            raise ReplayPolicyError(
                f"{expected.kind} {expected.label!r}: the {where} has replay_policy {policy!r}, "
                f"which forbids replaying it{needs}",
                code=f"{policy}_policy",
                diagnostic=build_diagnostic(expected, call, live),
            )


def check_live_tool(
    allow_live_tools: frozenset[str], expected: RecordedCall, call: BoundaryCall, live: LiveInput
) -> None:
    """Check 8, live mode: a tool runs only when named in ``allow_live_tools`` (spec replay.txt "Modes").

    Raises:
        ReplayPolicyError: ``live_tool_not_authorized``, before the body runs and before the recorded
            response is consumed.
    """
    if expected.name not in allow_live_tools:
        raise ReplayPolicyError(
            f"live replay of tool {expected.name!r} requires explicit authorization "
            "(allow_live_tools); its body did not run and its response was not consumed",
            code="live_tool_not_authorized",
            diagnostic=build_diagnostic(expected, call, live),
        )
