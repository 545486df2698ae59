"""Spec replay.txt "Modes" and hybrid-replay.txt: frozen, hybrid, live, forbidden, manual, derived."""

from __future__ import annotations

import pytest
import replay_agents as agents

from stepfork.replay import ReplayMismatchError, ReplayPolicyError, ReplaySession
from stepfork.trace import ReplayPolicy


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    agents.CALLS.clear()


@pytest.fixture
def booking(recorder):
    path = recorder(agents.booking_agent)
    agents.CALLS.clear()
    return path


def test_frozen_is_the_default_and_never_runs_a_dependency_body(booking) -> None:
    with ReplaySession.from_trace(booking) as replay:
        agents.booking_agent()
    assert replay.mode == "frozen"
    assert replay.mode == ReplayPolicy.FROZEN
    assert agents.CALLS == []


def test_hybrid_runs_the_selected_llm_again_with_a_changed_prompt_and_keeps_tools_frozen(booking) -> None:
    with ReplaySession.from_trace(booking, mode="hybrid", live_llms={"openai/gpt-test"}) as replay:
        result = agents.booking_agent(content="a changed prompt")
        replay.verify_complete()
    assert agents.CALLS == ["llm"]
    assert result == {"booked": "Paris-B"}
    assert [c.action for c in replay.executed_calls] == ["substituted", "executed", "substituted"]
    assert [c.status for c in replay.executed_calls][1] is None


def test_hybrid_still_rejects_a_changed_llm_model_before_the_body(booking) -> None:
    with ReplaySession.from_trace(booking, mode="hybrid", live_llms={"openai/gpt-test"}) as replay:
        flights = agents.search_flights("Paris")
        with pytest.raises(ReplayMismatchError) as info:
            agents.pick(flights, model="gpt-other")
    assert info.value.code == "model_mismatch"
    assert agents.CALLS == []
    assert replay.divergence is info.value


def test_hybrid_rejects_a_new_tool_call_before_the_tool_body_runs(booking) -> None:
    with (
        ReplaySession.from_trace(booking, mode="hybrid", live_llms={"openai/gpt-test"}),
        pytest.raises(ReplayMismatchError) as info,
    ):
        agents.charge_card(10)
    assert info.value.code == "name_mismatch"
    assert agents.CALLS == []


def test_live_runs_llms_and_denies_unlisted_tools_before_the_body_runs(booking) -> None:
    with ReplaySession.from_trace(booking, mode="live") as replay:
        with pytest.raises(ReplayPolicyError) as info:
            agents.search_flights("Paris")
        assert replay.pending == 3  # the recorded response was not consumed
    assert info.value.code == "live_tool_not_authorized"
    assert agents.CALLS == []


def test_live_runs_every_occurrence_of_an_allowed_tool_and_serves_the_others(booking) -> None:
    with ReplaySession.from_trace(
        booking, mode="live", allow_live_tools={"search_flights", "book_flight"}
    ) as r:
        result = agents.booking_agent()
        r.verify_complete()
    assert agents.CALLS == ["search_flights", "llm", "book_flight"]
    assert result == {"booked": "Paris-B"}
    assert [c.action for c in r.executed_calls] == ["executed"] * 3
    assert all(c.status is None for c in r.executed_calls)


def test_live_still_matches_inputs_before_running_an_allowed_tool(booking) -> None:
    with (
        ReplaySession.from_trace(booking, mode="live", allow_live_tools={"search_flights"}),
        pytest.raises(ReplayMismatchError) as info,
    ):
        agents.search_flights("Rome")
    assert info.value.code == "input_diverged"
    assert agents.CALLS == []


def test_forbidden_rejects_every_call_before_matching(booking) -> None:
    with (
        ReplaySession.from_trace(booking, mode="forbidden") as replay,
        pytest.raises(ReplayPolicyError) as info,
    ):
        agents.charge_card(1)  # not even the recorded first call: rejected before matching
    assert info.value.code == "forbidden_mode"
    assert agents.CALLS == []
    assert replay.pending == 3


def test_manual_without_an_approve_callback_rejects_the_call(booking) -> None:
    with ReplaySession.from_trace(booking, mode="manual"), pytest.raises(ReplayPolicyError) as info:
        agents.search_flights("Paris")
    assert info.value.code == "not_approved"


def test_manual_serves_approved_calls_and_rejects_refused_ones(booking) -> None:
    seen: list[tuple[str, object]] = []

    def approve(call) -> bool:
        seen.append((call.label, call.input))
        return call.name != "book_flight"

    with ReplaySession.from_trace(booking, mode="manual", approve=approve) as replay:
        flights = agents.search_flights("Paris")
        choice = agents.pick(flights)
        with pytest.raises(ReplayPolicyError) as info:
            agents.book_flight(choice["pick"])
    assert flights == ["Paris-A", "Paris-B"]
    assert info.value.code == "not_approved"
    assert seen[0] == ("search_flights", {"city": "Paris", "limit": 10})
    assert agents.CALLS == []
    assert replay.pending == 1


def test_derived_mode_is_rejected_as_not_supported(booking) -> None:
    with pytest.raises(ValueError, match="derived"):
        ReplaySession.from_trace(booking, mode="derived")


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"mode": "hybrid"}, "requires explicit live_llms"),
        ({"mode": "frozen", "live_llms": {"openai/gpt-test"}}, "only valid with mode='hybrid'"),
        ({"mode": "hybrid", "live_llms": {"openai/other"}}, "not found in trace"),
        ({"mode": "frozen", "allow_live_tools": {"search_flights"}}, "only valid with mode='live'"),
        (
            {"mode": "hybrid", "live_llms": {"openai/gpt-test"}, "allow_live_tools": {"search_flights"}},
            "only valid with mode='live'",
        ),
        ({"mode": "live", "allow_live_tools": {"charge_card"}}, "not found in trace"),
        ({"mode": "frozen", "approve": lambda call: True}, "only valid with mode='manual'"),
        ({"mode": "sometimes"}, "unknown replay mode"),
    ],
)
def test_invalid_option_combinations_raise_value_error_naming_the_problem(booking, kwargs, needle) -> None:
    with pytest.raises(ValueError, match=needle):
        ReplaySession.from_trace(booking, **kwargs)


def test_hybrid_label_is_the_model_when_no_provider_was_recorded(recorder) -> None:
    from stepfork.trace import llm_request

    def agent() -> object:
        return llm_request(model="local-model", input={"q": 1}, call=lambda: {"a": 1})

    path = recorder(agent)
    ran: list[int] = []
    with ReplaySession.from_trace(path, mode="hybrid", live_llms={"local-model"}) as replay:
        llm_request(model="local-model", input={"q": 2}, call=lambda: ran.append(1) or {"a": 2})
        replay.verify_complete()
    assert ran == [1]


def test_a_recorded_forbidden_policy_is_refused_in_frozen_mode(recorder) -> None:
    from stepfork.trace import trace_tool

    @trace_tool(name="wire_money", replay_policy="forbidden")
    def wire_money(amount: int) -> str:
        return "sent"

    path = recorder(lambda: wire_money(1))
    with ReplaySession.from_trace(path) as replay, pytest.raises(ReplayPolicyError) as info:
        wire_money(1)
    assert info.value.code == "forbidden_policy"
    assert replay.pending == 1


def test_hybrid_checks_the_stored_fingerprint_of_the_live_llms_original_input(booking) -> None:
    from stepfork.trace import Trace

    trace = Trace.load(booking)
    position = next(i for i, e in enumerate(trace.events) if e.type == "llm_request")
    trace.events[position] = trace.events[position].model_copy(update={"input": {"tampered": True}})
    with ReplaySession.from_trace(trace, mode="hybrid", live_llms={"openai/gpt-test"}):
        flights = agents.search_flights("Paris")
        with pytest.raises(ReplayMismatchError) as info:
            agents.pick(flights, content="new prompt")
    assert info.value.code == "invalid_input_fingerprint"
    assert agents.CALLS == []


def test_the_reference_before_tool_api_returns_a_decision(booking) -> None:
    with ReplaySession.from_trace(booking) as replay:
        decision = replay.before_tool(name="search_flights", input={"city": "Paris", "limit": 10})
    assert (decision.execute, decision.value, decision.matched.action) == (
        False,
        ["Paris-A", "Paris-B"],
        "substituted",
    )
