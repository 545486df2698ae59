"""Spec replay.txt "Trajectory assertions" (stepfork.assertions)."""

from __future__ import annotations

import contextlib

import pytest
import replay_agents as agents

from stepfork.assertions import (
    assert_max_steps,
    assert_tool_arguments,
    assert_tool_call_count,
    assert_tool_called,
    assert_tool_not_called,
    assert_tool_order,
    assert_tool_sequence,
    assert_trajectory,
    validate_trajectory_expectation,
)
from stepfork.replay import RecordedDependencyError, ReplayMismatchError, ReplaySession
from stepfork.trace import trace_tool


@trace_tool(name="charge_card")
def failing_charge(amount: int) -> dict:
    raise RuntimeError("card declined")


@pytest.fixture
def replay(recorder):
    path = recorder(agents.booking_agent)
    with ReplaySession.from_trace(path) as session:
        agents.booking_agent()
        session.verify_complete()
    return session


def test_the_specs_example_assertions_pass_on_a_complete_replay(replay) -> None:
    assert_tool_called(replay, "search_flights")
    assert_tool_not_called(replay, "charge_card")
    assert_tool_call_count(replay, "search_flights", 1)
    assert_tool_arguments(replay, "search_flights", {"city": "Paris", "limit": 10}, occurrence=1)
    assert_tool_order(replay, "search_flights", "book_flight")
    assert_tool_sequence(replay, ["search_flights", "book_flight"], strict=False)
    assert_tool_sequence(replay, ["search_flights", "book_flight"])
    assert_max_steps(replay, 3)


@pytest.mark.parametrize(
    ("check", "needle"),
    [
        (lambda r: assert_tool_called(r, "charge_card"), "expected tool 'charge_card' to be called"),
        (lambda r: assert_tool_not_called(r, "book_flight"), "not to be called"),
        (lambda r: assert_tool_call_count(r, "search_flights", 2), "2 time(s); actual: 1"),
        (
            lambda r: assert_tool_arguments(r, "search_flights", {"city": "Rome", "limit": 10}),
            "expected arguments",
        ),
        (
            lambda r: assert_tool_arguments(
                r, "search_flights", {"city": "Paris", "limit": 10}, occurrence=2
            ),
            "called 1 time(s)",
        ),
        (lambda r: assert_tool_order(r, "book_flight", "search_flights"), "before tool"),
        (lambda r: assert_tool_sequence(r, ["book_flight"]), "exact tool sequence"),
        (lambda r: assert_tool_sequence(r, ["book_flight", "search_flights"], strict=False), "in order"),
        (lambda r: assert_max_steps(r, 2), "at most 2 steps"),
    ],
)
def test_failed_assertions_say_what_was_expected_and_what_was_seen(replay, check, needle) -> None:
    with pytest.raises(AssertionError, match=None) as info:
        check(replay)
    assert needle in str(info.value)
    assert "search_flights" in str(info.value) or "steps" in str(info.value)


def test_max_steps_counts_llm_calls_too(replay) -> None:
    assert [c.kind for c in replay.executed_calls] == ["tool", "llm", "tool"]
    with pytest.raises(AssertionError):
        assert_max_steps(replay, 2)


def test_a_caught_divergence_invalidates_every_assertion(recorder) -> None:
    path = recorder(lambda: agents.search_flights("Paris"))
    with ReplaySession.from_trace(path) as replay:
        assert replay.divergence_count == 0
        for city in ("Rome", "Oslo"):
            with contextlib.suppress(ReplayMismatchError):
                agents.search_flights(city)
        agents.search_flights("Paris")
    assert replay.divergence_count == 2  # each caught divergence counts; the first is kept
    assert replay.divergence is not None
    assert "Rome" in str(replay.divergence.diagnostic)
    with pytest.raises(AssertionError, match="stepfork replay diverged"):
        assert_tool_called(replay, "search_flights")


def test_an_incomplete_replay_fails_assertions(recorder) -> None:
    path = recorder(agents.booking_agent)
    with ReplaySession.from_trace(path) as replay:
        agents.search_flights("Paris")
    with pytest.raises(AssertionError, match="stepfork replay incomplete"):
        assert_tool_called(replay, "search_flights")


def test_failed_tool_calls_count(recorder) -> None:
    def agent() -> None:
        with contextlib.suppress(RuntimeError):
            failing_charge(5)

    path = recorder(agent)
    with ReplaySession.from_trace(path) as replay, pytest.raises(RecordedDependencyError):
        failing_charge(5)
    assert_tool_call_count(replay, "charge_card", 1)
    assert_tool_arguments(replay, "charge_card", {"amount": 5})


@pytest.mark.parametrize("count", [-1, True, 1.0])
def test_bad_counts_are_value_errors(replay, count) -> None:
    with pytest.raises(ValueError):
        assert_tool_call_count(replay, "search_flights", count)


def test_assert_trajectory_applies_the_reviewed_json_shape(replay) -> None:
    assert_trajectory(
        replay,
        {
            "called": ["search_flights"],
            "not_called": ["charge_card"],
            "counts": {"book_flight": 1},
            "arguments": [{"name": "book_flight", "value": {"flight": "Paris-B"}, "occurrence": 1}],
            "order": [["search_flights", "book_flight"]],
            "sequence": ["book_flight"],
            "strict_sequence": False,
            "max_steps": 3,
        },
    )
    with pytest.raises(AssertionError, match="charge_card"):
        assert_trajectory(replay, {"called": ["charge_card"]})


@pytest.mark.parametrize(
    "bad",
    [
        {"calls": ["x"]},
        {"called": "search_flights"},
        {"counts": {"x": -1}},
        {"arguments": [{"name": "x"}]},
        {"arguments": [{"name": "x", "value": 1, "extra": 2}]},
        {"order": [["a"]]},
        {"strict_sequence": False},
        {"max_steps": "3"},
        ["called"],
    ],
)
def test_unknown_keys_and_bad_shapes_raise_value_error(replay, bad) -> None:
    with pytest.raises(ValueError):
        validate_trajectory_expectation(bad)
    with pytest.raises(ValueError):
        assert_trajectory(replay, bad)
