"""Behaviour steps of a recorded run, and the value comparison that diff and score share.

A run's *behaviour* is what an agent did that a user can observe (issue 5, "diff"): its tool and LLM calls
(input, output, status), its errors, and the run's final status and output. Volatile fields -- event ids,
run ids, timestamps, durations, hashes, token counts, cost -- are not behaviour and are never extracted.

Names kept from the reference API (interop/REFERENCE-API.md, ``stepfork.diff``): :class:`BehaviorStep`,
:func:`extract_behavior`, :class:`FieldChange`, :func:`values_equal`, :func:`first_difference`,
:func:`collect_field_changes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from stepfork.analysis._shared.render import ABSENT, redacted, show_value
from stepfork.trace.http_calls import is_http_call

ChangeKind = Literal["added", "removed", "changed", "unchanged"]
"""How a step or a value differs between baseline and candidate (a Literal, as in the reference)."""

StepType = Literal["tool", "http", "llm", "state", "error", "run"]


@dataclass(frozen=True)
class BehaviorStep:
    """One observable step of a run.

    Attributes:
        step_type: ``tool``, ``http`` (a request outside the agent's order, issue 29: a ``tool_call`` named
            ``http METHOD URL``, :mod:`stepfork.trace.http_calls`), ``llm``, ``state``, ``error`` or ``run``.
        label: the tool name; ``provider/model`` (or ``model``) for an LLM; the state key; the error type;
            ``run`` for the run step.
        payload: redacted JSON fields: tool/llm ``{input, output, status}``, state ``{before, after}``,
            error ``{message}``, run ``{run_status, output}``.
        step: the ``step`` of the event the behaviour step starts at (as ``inspect`` shows it).
        event_id: the id of that event (``""`` for a step built by hand); not part of the behaviour.
    """

    step_type: StepType
    label: str
    payload: dict[str, Any]
    step: int = 0
    event_id: str = ""

    @property
    def identity(self) -> tuple[str, str]:
        """The call identity used for alignment: ``(step_type, label)``; inputs are compared, not aligned."""
        return (self.step_type, self.label)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{step_type, label, step, payload}`` (JSON-ready)."""
        return {"step_type": self.step_type, "label": self.label, "step": self.step, "payload": self.payload}


def _llm_label(event: Any) -> str:
    provider = getattr(event, "provider", None)
    return f"{provider}/{event.model}" if provider else str(event.model)


def _status(event: Any) -> str:
    return str(getattr(event.status, "value", event.status))


def extract_behavior(trace: Any) -> list[BehaviorStep]:
    """Return the behaviour steps of ``trace`` (a :class:`stepfork.trace.Trace`) in recorded order.

    A tool call is paired with its child ``tool_result`` (else the next unpaired result with the same name,
    as the reference's legacy pairing does); an LLM request with its child response or error. Error events
    that belong to a paired call (the error under a failed tool result or LLM request) are part of that
    call's status and output, not separate steps. The ``run`` step comes last and is always present:
    ``run_status`` from ``run_end`` (else the manifest status) and ``output`` (``null`` when absent).
    Payload values are redacted.
    """
    events = list(trace.events)
    used: set[str] = set()
    consumed_ids: set[str] = set()
    steps: list[BehaviorStep] = []
    run_status: Any = getattr(getattr(trace, "status", None), "value", getattr(trace, "status", None))
    run_output: Any = None
    output: Any
    for index, event in enumerate(events):
        kind = str(getattr(event.type, "value", event.type))
        if kind == "tool_call":
            result = _find_result(events, index, "tool_result", used)
            output = result.output if result is not None else ABSENT
            status = _status(result) if result is not None else "skipped"
            consumed_ids.add(event.id)
            if result is not None:
                consumed_ids.add(result.id)
            kind_of: StepType = "http" if is_http_call(event.name) else "tool"
            step = _call_step(kind_of, event.name, event.input, output, status, event.step, event.id)
            steps.append(step)
        elif kind == "llm_request":
            result = _find_result(events, index, "llm_response", used)
            if result is None:
                result = _find_result(events, index, "error", used, by_name=False)
            consumed_ids.add(event.id)
            if result is None:
                output = ABSENT
                status = "skipped"
            elif str(getattr(result.type, "value", result.type)) == "error":
                output = {"error_type": result.error_type, "message": result.message}
                status = "error"
            else:
                output, status = result.output, _status(result)
            steps.append(_call_step("llm", _llm_label(event), event.input, output, status, event.step))
        elif kind == "state_change":
            payload = {"before": redacted(event.before), "after": redacted(event.after)}
            steps.append(BehaviorStep("state", event.key or "state", payload, event.step))
        elif kind == "error":
            if event.id in used or (event.parent_id in consumed_ids):
                continue
            steps.append(
                BehaviorStep("error", event.error_type, {"message": redacted(event.message)}, event.step)
            )
        elif kind == "run_end":
            run_status = str(getattr(event.run_status, "value", event.run_status))
            run_output = event.output
    last_step = events[-1].step if events else 0
    steps.append(
        BehaviorStep("run", "run", {"output": redacted(run_output), "run_status": run_status}, last_step)
    )
    return steps


def _call_step(
    kind: StepType, label: str, inp: Any, output: Any, status: str, step: int, event_id: str = ""
) -> BehaviorStep:
    payload = {
        "input": redacted(inp),
        "output": output if output is ABSENT else redacted(output),
        "status": status,
    }
    if payload["output"] is ABSENT:
        del payload["output"]
    return BehaviorStep(kind, label, payload, step, event_id)


def _find_result(events: list[Any], index: int, kind: str, used: set[str], *, by_name: bool = True) -> Any:
    call = events[index]
    for later in events[index + 1 :]:
        same_kind = str(getattr(later.type, "value", later.type)) == kind
        if later.parent_id == call.id and same_kind and later.id not in used:
            used.add(later.id)
            return later
    if not by_name or kind != "tool_result":
        return None
    for later in events[index + 1 :]:
        later_kind = str(getattr(later.type, "value", later.type))
        if later_kind == "tool_call" and later.name == call.name:
            return None
        if later_kind == kind and later.name == call.name and later.id not in used:
            used.add(later.id)
            return later
    return None


class FieldChange(BaseModel):
    """One difference inside a step (a frozen pydantic model, as the reference's: ``model_dump_json()``).

    Attributes:
        path: the JSON path, ``output.should_notify``, ``a.b[1]`` or ``[1]`` (an item of a list at the
            root, the reference's form); ``$`` at the root of a value.
        kind: ``changed``; ``added`` (absent in the baseline); ``removed`` (absent in the candidate).
        expected: the baseline value, :data:`ABSENT` when the key or item is not there (``null`` in
            ``model_dump``, as the reference; ``to_dict`` leaves the key out).
        actual: the candidate value, :data:`ABSENT` when the key or item is not there.
        noise: for a difference ``diff`` ignored as noise, why (a rule's name, ``renamed id``,
            ``timing``, ``new field``, ``--ignore``); None for a real one.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    path: str
    kind: ChangeKind
    expected: Any = None
    actual: Any = None
    # not in model_dump: the reference's JSON shape stays as it is (to_dict carries it)
    noise: str | None = Field(default=None, exclude=True)
    at: tuple[int, int] | None = Field(default=None, exclude=True)
    """For two strings: the character offsets, in each, of their first real difference (ids the diff's
    renaming pairs are not one), which the report shows; else None."""

    @field_serializer("expected", "actual")
    def _dump_side(self, value: Any) -> Any:
        return None if value is ABSENT else redacted(value)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{path, kind, expected?, actual?}``; an absent side is an absent key (never ``null``)."""
        out: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.expected is not ABSENT:
            out["expected"] = redacted(self.expected)
        if self.actual is not ABSENT:
            out["actual"] = redacted(self.actual)
        if self.noise is not None:
            out["noise"] = self.noise
        return out

    def __str__(self) -> str:
        return f"{self.path}: expected {show_value(self.expected)}, actual {show_value(self.actual)}"


def values_equal(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` have the same canonical JSON bytes (``1`` != ``1.0``, ``True`` != ``1``).

    Values that have no canonical bytes (NaN, a set...) compare unequal (reference ``values_equal``).
    """
    if a is ABSENT or b is ABSENT:
        return a is b
    from stepfork.trace import canonical_json

    try:
        return bool(canonical_json(a) == canonical_json(b))
    except (TypeError, ValueError):
        return False


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"  # "[1]" at the root, as the reference's paths
    return f"{path}.{key}" if path else key


def collect_field_changes(expected: Any, actual: Any, *, path: str, output: list[FieldChange]) -> None:
    """Append to ``output`` every leaf difference between ``expected`` and ``actual`` under ``path``.

    Dicts are compared key by key (sorted), lists item by item; a missing key or item is ``added`` or
    ``removed``, anything else that differs is ``changed`` at the deepest path where both sides exist.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            sub = _join(path, key)
            if key not in expected:
                output.append(FieldChange(path=sub, kind="added", expected=ABSENT, actual=actual[key]))
            elif key not in actual:
                output.append(FieldChange(path=sub, kind="removed", expected=expected[key], actual=ABSENT))
            else:
                collect_field_changes(expected[key], actual[key], path=sub, output=output)
        return
    if isinstance(expected, list) and isinstance(actual, list):
        for i in range(max(len(expected), len(actual))):
            sub = _join(path, i)
            if i >= len(expected):
                output.append(FieldChange(path=sub, kind="added", expected=ABSENT, actual=actual[i]))
            elif i >= len(actual):
                output.append(FieldChange(path=sub, kind="removed", expected=expected[i], actual=ABSENT))
            else:
                collect_field_changes(expected[i], actual[i], path=sub, output=output)
        return
    if not values_equal(expected, actual):
        output.append(FieldChange(path=path or "$", kind="changed", expected=expected, actual=actual))


def first_difference(expected: Any, actual: Any, *, path: str = "") -> tuple[str, Any, Any] | None:
    """Return ``(path, expected, actual)`` of the first difference (sorted keys, list order), else None.

    A difference at the root has path ``"$"`` (reference ``first_difference``); an absent side is
    :data:`ABSENT`.
    """
    changes: list[FieldChange] = []
    collect_field_changes(expected, actual, path=path, output=changes)
    if not changes:
        return None
    first = changes[0]
    return (first.path, first.expected, first.actual)
