"""The recorded run_input reaches an entrypoint that takes parameters (issue 13; docs/replay.md,
"Entrypoints and the recorded run input"): one rule, ``entrypoint_arguments``, used by every caller."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from stepfork.replay.entrypoint import EntrypointCallError, call_entrypoint, entrypoint_arguments
from stepfork.trace import to_jsonable


def kw(city: str, units: str = "C") -> tuple[str, str]:
    return city, units


def one(request: Any) -> Any:
    return request


def none() -> str:
    return "none"


def two_required(a: int, b: int) -> int:
    return a + b


def star(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def only_args(*args: Any) -> tuple[Any, ...]:
    return args


class Request(BaseModel):
    city: str
    when: dt.date


def typed(request: Request) -> Request:
    return request


def dated(when: dt.datetime) -> dt.datetime:
    return when


@dataclass
class Agent:
    prefix: str

    def run(self, city: str) -> str:
        return self.prefix + city


@pytest.mark.parametrize(
    ("function", "run_input", "expected"),
    [
        (kw, {"city": "Oslo"}, ((), {"city": "Oslo"})),
        (kw, {"city": "Oslo", "units": "F"}, ((), {"city": "Oslo", "units": "F"})),
        (one, {"city": "Oslo"}, (({"city": "Oslo"},), {})),  # keys the parameters do not accept
        (one, "Oslo", (("Oslo",), {})),
        (one, [1, 2], (([1, 2],), {})),
        (none, {"city": "Oslo"}, ((), {})),
        (none, None, ((), {})),
        (star, None, ((), {})),
        (star, {"x": 1}, ((), {"x": 1})),
        (only_args, {"x": 1}, ((), {})),
        (Agent("> ").run, {"city": "Oslo"}, ((), {"city": "Oslo"})),  # a bound method: self is not counted
        (Agent("> ").run, "Oslo", (("Oslo",), {})),
    ],
)
def test_the_rule(function: Any, run_input: Any, expected: Any) -> None:
    assert entrypoint_arguments(function, run_input) == expected


@pytest.mark.parametrize(
    ("function", "run_input", "missing", "recorded"),
    [
        (two_required, {"a": 1}, ("b",), "an object with the keys: a"),  # no rule fits
        (two_required, 5, ("b",), "one int value"),
        (kw, None, ("city",), "no run input"),  # nothing recorded
        (one, None, ("request",), "no run input"),
    ],
)
def test_a_required_parameter_the_run_input_does_not_fill_is_named_before_any_call(
    function: Any, run_input: Any, missing: tuple[str, ...], recorded: str
) -> None:
    """The entrypoint cannot be called with the recorded run input: one line naming the parameter, raised
    before the call (the check could not execute), not a TypeError from inside the replay."""
    with pytest.raises(EntrypointCallError) as caught:
        entrypoint_arguments(function, run_input)
    assert caught.value.code == "missing_argument"
    assert caught.value.parameters == missing
    message = str(caught.value)
    assert "\n" not in message
    assert f"parameter {missing[0]!r} is missing" in message
    assert recorded in message


def test_a_kwarg_is_validated_into_its_annotation() -> None:
    run_input = to_jsonable({"request": {"city": "Oslo", "when": "2026-12-01"}})
    result = call_entrypoint(typed, run_input)
    assert result == Request(city="Oslo", when=dt.date(2026, 12, 1))


def test_a_tagged_value_is_decoded() -> None:
    when = dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC)
    assert call_entrypoint(dated, to_jsonable({"when": when})) == when
    # the tagged object as a whole is one value, not keyword arguments
    assert call_entrypoint(one, to_jsonable(when)) == when


def test_a_value_that_does_not_fit_the_annotation_is_passed_as_json() -> None:
    assert call_entrypoint(typed, {"request": {"city": "Oslo"}}) == {"city": "Oslo"}


def test_async_entrypoints_get_the_input_too() -> None:
    async def agent(city: str) -> str:
        return city.upper()

    assert call_entrypoint(agent, {"city": "oslo"}) == "OSLO"


def test_a_one_parameter_agent_no_longer_fails_with_type_error() -> None:
    assert call_entrypoint(one, {"anything": 1}) == {"anything": 1}
    assert call_entrypoint(none, {"anything": 1}) == "none"


class Opaque:
    """A class pydantic has no schema for (as LangGraph's ``Send`` in ``Command.goto``)."""


@dataclass
class Resume:
    resume: Any = None
    goto: Opaque | tuple[Any, ...] = ()


def takes_resume(command: Resume) -> Resume:
    return command


def test_a_dataclass_pydantic_cannot_validate_is_built_from_the_decoded_fields() -> None:
    (built,), _ = entrypoint_arguments(takes_resume, to_jsonable(Resume(resume={"type": "accept"})))
    assert built == Resume(resume={"type": "accept"}, goto=())  # the tuple tag decoded, too
    # fields the class does not have: the decoded JSON value, for the agent to report
    (passed,), _ = entrypoint_arguments(takes_resume, {"resume": 1, "other": 2})
    assert passed == {"resume": 1, "other": 2}
