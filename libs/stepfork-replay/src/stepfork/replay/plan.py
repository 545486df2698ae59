"""The recorded call plan: which dependency calls a replay expects, in which order, with which outcome.

Every ``tool_call`` and ``llm_request`` of the bundle, in file order, becomes a :class:`RecordedCall`
paired with its outcome (interop/REFERENCE-NOTES.md section 6, "Recorded calls"):

- a tool call takes its first child ``tool_result``; failing that, the next unpaired ``tool_result`` of the
  same name, stopping at the next call to that name (legacy bundles);
- an LLM request takes its first child ``llm_response`` or ``error`` (no name fallback);
- a failed tool result takes its error type and message from its child ``error`` event, else from its
  ``{"error_type", "message"}`` output; the error's ``details["chain"]`` is the recorded cause chain (C8);
- a call without an outcome is ``missing`` with status ``skipped``.

Which calls replay sees (DESIGN.md, "Which calls replay sees"): a call made inside a frozen call's body is
not made during replay, so it is hidden. Nesting is decided by *time*: a call is nested in an ancestor
(following ``parent_id``) only when it was recorded between that ancestor call and its outcome. The
reference's golden bundles chain every event to the previous one; read by time they are flat and replay as
such. Computed in one pass (the largest outcome position among an event's hiding ancestors), so loading is
linear in the number of events.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from stepfork.trace.errors import UNFINISHED_TYPE
from stepfork.trace.models import EventStatus, EventType

_CALL_TYPES = (EventType.TOOL_CALL, EventType.LLM_REQUEST)


def call_label(kind: str, name: str | None, provider: str | None, model: str | None) -> str:
    """The spec's label of a call: the tool name; for an LLM ``provider/model``, or ``model`` alone."""
    if kind == "tool":
        return name or ""
    if provider:
        return f"{provider}/{model}"
    return model or ""


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One recorded dependency call and its outcome.

    Attributes:
        index: 0-based position in the list it belongs to (the visible plan, or all calls).
        kind: ``"tool"`` or ``"llm"``.
        label: see :func:`call_label`.
        name: the tool name, or the model for an LLM call.
        model, provider: the LLM's model and provider (None for tools; provider may be None).
        input: the recorded (redacted) input JSON; input_hash: its stored SHA-256 or None.
        policy: the event's ``replay_policy`` value (``frozen``, ``live``, ``manual``, ...).
        status: an :class:`EventStatus` (a StrEnum, so it equals ``"ok"``, ``"error"`` or ``"skipped"``,
            the last for a missing outcome), as the reference's.
        output: the recorded output JSON (None for a failed LLM call); output_hash: stored SHA-256 or None.
        error_type, error_message: the recorded failure, when status is ``error``.
        missing: True when no outcome was recorded.
        call_event_id: id of the ``tool_call``/``llm_request`` event.
        step: ``step`` of that event.
        error_chain: the recorded cause chain (tuple of JSON objects), empty when none was stored.
        error_details: the recorded ``details`` of the error event, or None.
        position: 0-based line of the call event in ``events.jsonl``.
        end_position: line of its outcome event, or None when missing.
        parent_id: ``parent_id`` of the call event (None for a hand-built root-level call).
    """

    index: int
    kind: str
    label: str
    name: str
    model: str | None
    provider: str | None
    input: Any
    input_hash: str | None
    policy: str
    status: EventStatus
    output: Any
    output_hash: str | None
    error_type: str | None
    error_message: str | None
    missing: bool
    call_event_id: str
    step: int = 0
    error_chain: tuple[Any, ...] = ()
    error_details: Any = None
    position: int = 0
    end_position: int | None = None
    parent_id: str | None = None

    @property
    def unfinished(self) -> bool:
        """True when the call was still running when the recorded run ended: its outcome is the recorder's
        :class:`~stepfork.trace.errors.UnfinishedCallError` (docs/recording.md, "Calls still running when
        the run ends"). A replay serves it by holding the caller until the run ends; one never reached is
        not missing."""
        return self.error_type == UNFINISHED_TYPE and self.status == "error"


def _value(enum_or_str: Any) -> str:
    return str(getattr(enum_or_str, "value", enum_or_str))


def _pair_outcomes(events: Sequence[Any], children: dict[str, list[int]]) -> dict[int, int]:
    """Map the position of each call event to the position of its outcome event."""
    outcome: dict[int, int] = {}
    taken: set[int] = set()
    unpaired_tools: list[int] = []
    for position, event in enumerate(events):
        if event.type == EventType.TOOL_CALL:
            for child in children.get(event.id, ()):
                if events[child].type == EventType.TOOL_RESULT and child not in taken:
                    outcome[position] = child
                    taken.add(child)
                    break
            else:
                unpaired_tools.append(position)
        elif event.type == EventType.LLM_REQUEST:
            for child in children.get(event.id, ()):
                if events[child].type in (EventType.LLM_RESPONSE, EventType.ERROR) and child not in taken:
                    outcome[position] = child
                    taken.add(child)
                    break
    if unpaired_tools:
        by_name: dict[str, list[int]] = {}
        for position, event in enumerate(events):
            if event.type in (EventType.TOOL_CALL, EventType.TOOL_RESULT):
                by_name.setdefault(event.name, []).append(position)
        for position in unpaired_tools:
            same = by_name[events[position].name]
            for candidate in same[bisect.bisect_right(same, position) :]:
                if events[candidate].type == EventType.TOOL_CALL:
                    break
                if candidate not in taken:
                    outcome[position] = candidate
                    taken.add(candidate)
                    break
    return outcome


def _error_info(
    events: Sequence[Any], children: dict[str, list[int]], result: Any
) -> tuple[str | None, str | None, tuple[Any, ...], Any]:
    """(error_type, message, chain, details) of a failed outcome event."""
    error = result if result.type == EventType.ERROR else None
    if error is None:
        for child in children.get(result.id, ()):
            if events[child].type == EventType.ERROR:
                error = events[child]
                break
    if error is not None:
        details = error.details
        chain = details.get("chain") if isinstance(details, dict) else None
        return error.error_type, error.message, tuple(chain) if isinstance(chain, list) else (), details
    output = getattr(result, "output", None)
    if isinstance(output, dict):
        error_type = output.get("error_type")
        message = output.get("message")
        return (
            error_type if isinstance(error_type, str) else None,
            message if isinstance(message, str) else None,
            (),
            None,
        )
    return None, None, (), None


def extract_all_calls(events: Sequence[Any]) -> list[RecordedCall]:
    """Every ``tool_call``/``llm_request`` of ``events`` (file order), paired with its outcome.

    ``index`` is the position among all calls. Nothing is hidden; see :func:`extract_recorded_calls`.
    """
    children: dict[str, list[int]] = {}
    for position, event in enumerate(events):
        if event.parent_id is not None:
            children.setdefault(event.parent_id, []).append(position)
    outcomes = _pair_outcomes(events, children)
    calls: list[RecordedCall] = []
    for position, event in enumerate(events):
        if event.type not in _CALL_TYPES:
            continue
        kind = "tool" if event.type == EventType.TOOL_CALL else "llm"
        # only llm_request has provider/model; pydantic's attribute fallback is slow for absent names
        provider = event.provider if kind == "llm" else None
        model = event.model if kind == "llm" else None
        name: str = event.name if kind == "tool" else (model or "")
        result_pos = outcomes.get(position)
        output: Any = None
        output_hash: str | None = None
        error_type = error_message = None
        chain: tuple[Any, ...] = ()
        details: Any = None
        if result_pos is None:
            status = EventStatus.SKIPPED
        else:
            result = events[result_pos]
            status = EventStatus(_value(result.status))
            if result.type == EventType.ERROR:
                status = EventStatus.ERROR
            else:
                output = result.output
                output_hash = result.output_hash
            if status == EventStatus.ERROR.value:
                error_type, error_message, chain, details = _error_info(events, children, result)
        calls.append(
            RecordedCall(
                index=len(calls),
                kind=kind,
                label=call_label(kind, name, provider, model),
                name=name,
                model=model,
                provider=provider,
                input=event.input,
                input_hash=event.input_hash,
                policy=_value(event.replay_policy),
                status=status,
                output=output,
                output_hash=output_hash,
                error_type=error_type,
                error_message=error_message,
                missing=result_pos is None,
                call_event_id=event.id,
                step=event.step,
                error_chain=chain,
                error_details=details,
                position=position,
                end_position=result_pos,
                parent_id=event.parent_id,
            )
        )
    return calls


def visible_calls(
    events: Sequence[Any], calls: Iterable[RecordedCall], hides: Callable[[RecordedCall], bool]
) -> list[RecordedCall]:
    """The calls replay will see: those not nested (by time) in a call for which ``hides`` is True.

    A call C is hidden when some ancestor A (following ``parent_id`` to earlier events) hides and C's
    position lies between A and A's outcome (anywhere after A when A has no outcome). Re-indexed 0..n-1.
    """
    by_position = {call.position: call for call in calls}
    horizon = len(events) + 1
    position_of: dict[str, int] = {}
    reach = [-1] * len(events)  # largest outcome position among hiding ancestors-or-self
    visible: list[RecordedCall] = []
    for position, event in enumerate(events):
        parent = position_of.get(event.parent_id) if event.parent_id is not None else None
        inherited = reach[parent] if parent is not None else -1
        call = by_position.get(position)
        if call is not None:
            if inherited <= position:
                visible.append(_reindex(call, len(visible)))
            if hides(call):
                end = call.end_position if call.end_position is not None else horizon
                inherited = max(inherited, end)
        reach[position] = inherited
        position_of.setdefault(event.id, position)
    return visible


def _reindex(call: RecordedCall, index: int) -> RecordedCall:
    if call.index == index:
        return call
    from dataclasses import replace

    return replace(call, index=index)


def extract_recorded_calls(
    trace: Any,
    *,
    mode: str = "frozen",
    live_llms: Iterable[str] = (),
    all_calls: list[RecordedCall] | None = None,
) -> list[RecordedCall]:
    """The visible recorded calls of ``trace`` (a ``Trace`` or a sequence of events) for ``mode``.

    Frozen, manual and forbidden: every call hides the calls nested in it. Hybrid: every call except the
    LLMs whose label is in ``live_llms`` (their bodies run again). Live: nothing is hidden (bodies run).
    ``all_calls``: the result of :func:`extract_all_calls` for these events, when already computed.
    """
    events = list(getattr(trace, "events", trace))
    calls = all_calls if all_calls is not None else extract_all_calls(events)
    live = frozenset(live_llms)
    if mode == "live":
        return calls

    def hides(call: RecordedCall) -> bool:
        return not (mode == "hybrid" and call.kind == "llm" and call.label in live)

    return visible_calls(events, calls, hides)


def concurrent_groups(calls: Sequence[RecordedCall], *, overlap: bool = True) -> list[tuple[int, int]]:
    """Split the visible plan ``calls`` into runs of calls recorded concurrently (issue 6, "Concurrency").

    Calls are concurrent when they are siblings (same ``parent_id``) whose ``[call, result]`` intervals
    overlap in ``events.jsonl``: a call joins the current group when it has the group's parent and starts
    before the latest outcome of the group (a call without outcome never ends). Any other call, a
    non-sibling included, starts a new group, so sequential calls stay one per group, in recorded order.
    With ``overlap=False`` (ordering ``unordered``) every run of consecutive siblings is one group, whether
    or not their intervals overlap: free-running threads whose short calls never overlapped.

    Returns:
        ``[start, stop)`` ranges of indices into ``calls``, consecutive, covering every call.
    """
    groups: list[tuple[int, int]] = []
    start = 0
    parent: str | None = None
    reach = -1  # largest outcome position in the current group
    horizon = (calls[-1].position + 1) if calls else 0
    for index, call in enumerate(calls):
        end = call.end_position if call.end_position is not None else horizon
        if index > start and call.parent_id == parent and (not overlap or call.position < reach):
            reach = max(reach, end)
            continue
        if index > start:
            groups.append((start, index))
        start, parent, reach = index, call.parent_id, end
    if calls:
        groups.append((start, len(calls)))
    return groups
