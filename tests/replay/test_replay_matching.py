"""Spec replay.txt "Matching guarantees": one strict cursor, canonical inputs, fingerprints (C1, C7, C12)."""

from __future__ import annotations

import contextlib
import re

import pytest
import replay_agents as agents

from stepfork.replay import ReplayExhaustedError, ReplayMismatchError, ReplaySession
from stepfork.trace import (
    EventStatus,
    RunStart,
    ToolCall,
    ToolResult,
    Trace,
    canonical_json,
    fingerprint,
    llm_request,
    trace_tool,
)

HEX64 = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    agents.CALLS.clear()


@trace_tool(name="search_docs")
def search_docs(query: str, filters: dict) -> list[str]:
    return [query]


@trace_tool(name="log_event")
def log_event(message: str) -> None:
    return None


@trace_tool(name="create_ticket")
def create_ticket(title: str) -> dict:
    return {"ticket": title}


def test_c1_dict_key_order_does_not_matter_but_list_order_does(recorder) -> None:
    path = recorder(lambda: search_docs("q", {"lang": "en", "year": 2024, "tags": ["a", "b"]}))
    with ReplaySession.from_trace(path) as replay:
        assert search_docs("q", {"tags": ["a", "b"], "year": 2024, "lang": "en"}) == ["q"]
        replay.verify_complete()
    with ReplaySession.from_trace(path), pytest.raises(ReplayMismatchError) as info:
        search_docs("q", {"lang": "en", "year": 2024, "tags": ["b", "a"]})
    assert info.value.code == "input_diverged"
    assert info.value.diagnostic.difference.path == "$.filters.tags[0]"


def test_c7_an_inserted_call_reports_index_step_expected_and_actual_call(recorder) -> None:
    def before() -> dict:
        search_docs("q", {})
        return create_ticket("broken")

    path = recorder(before)
    with ReplaySession.from_trace(path) as replay:
        search_docs("q", {})
        with pytest.raises(ReplayMismatchError) as info:
            log_event("created")
    err = info.value
    assert err.code == "name_mismatch"
    assert (err.index, err.step) == (1, 3)
    d = err.diagnostic
    assert (d.expected_kind, d.expected_label) == ("tool", "create_ticket")
    assert (d.actual_kind, d.actual_label) == ("tool", "log_event")
    assert d.expected_input == '{"title":"broken"}'
    assert d.actual_input == '{"message":"created"}'
    assert d.expected_input_fingerprint == fingerprint({"title": "broken"})
    assert d.actual_input_fingerprint == fingerprint({"message": "created"})
    assert HEX64.match(d.recorded_output_fingerprint)
    assert d.fingerprints_computed is False
    assert replay.divergence is err


def test_c12_a_changed_default_is_reported_as_argument_drift(recorder) -> None:
    @trace_tool(name="search")
    def search_v1(q: str, limit: int = 10) -> list[str]:
        return [q]

    @trace_tool(name="search")
    def search_v2(q: str, limit: int = 20) -> list[str]:
        return [q]

    path = recorder(lambda: search_v1("hotels"))
    with ReplaySession.from_trace(path), pytest.raises(ReplayMismatchError) as info:
        search_v2("hotels")
    diff = info.value.diagnostic.difference
    assert (diff.path, diff.expected, diff.actual) == ("$.limit", 10, 20)


def test_llm_prompt_payload_provider_and_model_are_matched_with_a_model_fingerprint(recorder) -> None:
    path = recorder(lambda: agents.pick(["X"]))
    agents.CALLS.clear()
    with ReplaySession.from_trace(path), pytest.raises(ReplayMismatchError) as info:
        agents.pick(["Y"])
    assert info.value.code == "input_diverged"
    assert info.value.diagnostic.difference.path == "$.messages[0].content"
    with ReplaySession.from_trace(path), pytest.raises(ReplayMismatchError) as info:
        llm_request(model="gpt-test", provider="anthropic", input={}, call=lambda: None)
    d = info.value.diagnostic
    assert info.value.code == "provider_mismatch"
    assert d.expected_model_fingerprint == fingerprint({"model": "gpt-test", "provider": "openai"})
    assert d.actual_model_fingerprint == fingerprint({"model": "gpt-test", "provider": "anthropic"})
    assert agents.CALLS == []


def test_a_tool_where_an_llm_was_recorded_is_a_kind_mismatch(recorder) -> None:
    path = recorder(lambda: agents.pick(["X"]))
    with ReplaySession.from_trace(path), pytest.raises(ReplayMismatchError) as info:
        agents.charge_card(3)
    assert info.value.code == "kind_mismatch"


def test_repeated_identical_calls_are_served_in_recorded_order(recorder) -> None:
    states = iter(["pending", "pending", "done"])

    @trace_tool(name="poll")
    def poll(job: str) -> str:
        return next(states)

    def agent() -> list[str]:
        return [poll("j1") for _ in range(3)]

    path = recorder(agent)
    with ReplaySession.from_trace(path) as replay:
        assert [poll("j1") for _ in range(3)] == ["pending", "pending", "done"]
        replay.verify_complete()


def test_a_call_after_the_last_recorded_one_raises_exhausted(recorder) -> None:
    path = recorder(lambda: agents.charge_card(5))
    with ReplaySession.from_trace(path):
        agents.charge_card(5)
        with pytest.raises(ReplayExhaustedError) as info:
            agents.charge_card(5)
    assert info.value.code == "exhausted"
    assert isinstance(info.value, ReplayMismatchError)
    assert info.value.diagnostic.actual_input_fingerprint == fingerprint({"amount": 5})
    assert agents.CALLS == ["charge_card"]  # only the recording ran it


def test_verify_complete_raises_exhausted_listing_skipped_calls(recorder) -> None:
    path = recorder(agents.booking_agent)
    with ReplaySession.from_trace(path) as replay:
        agents.search_flights("Paris")
    with pytest.raises(ReplayExhaustedError) as info:
        replay.verify_complete()
    assert info.value.code == "incomplete"
    assert info.value.remaining == ("openai/gpt-test", "book_flight")
    assert info.value.index == 1


def test_a_caught_divergence_still_fails_verify_complete(recorder) -> None:
    path = recorder(lambda: agents.charge_card(5))
    with ReplaySession.from_trace(path) as replay:
        with contextlib.suppress(ReplayMismatchError):
            agents.charge_card(6)
        agents.charge_card(5)
    assert replay.pending == 0
    with pytest.raises(ReplayMismatchError) as info:
        replay.verify_complete()
    assert info.value.code == "diverged_earlier"
    assert info.value.__cause__ is replay.divergence


def _hand_built(input_hash: str | None, output_hash: str | None, *, inp: object = None) -> Trace:
    trace = Trace(run_id="run_hand", agent_name="hand")
    start = trace.add(RunStart(id="e0", run_id="run_hand"))
    call = trace.add(
        ToolCall(
            id="e1",
            run_id="run_hand",
            parent_id=start.id,
            name="charge_card",
            input=inp if inp is not None else {"amount": 5},
            input_hash=input_hash,
        )
    )
    trace.add(
        ToolResult(
            id="e2",
            run_id="run_hand",
            parent_id=call.id,
            name="charge_card",
            output={"charged": 5},
            output_hash=output_hash,
        )
    )
    return trace


def test_a_bundle_without_hashes_replays_and_marks_fingerprints_as_computed() -> None:
    trace = _hand_built(None, None)
    with ReplaySession.from_trace(trace) as replay:
        assert agents.charge_card(5) == {"charged": 5}
        replay.verify_complete()
    with ReplaySession.from_trace(trace), pytest.raises(ReplayMismatchError) as info:
        agents.charge_card(7)
    d = info.value.diagnostic
    assert d.fingerprints_computed is True
    assert d.expected_input_fingerprint == fingerprint({"amount": 5})


@pytest.mark.parametrize(
    ("input_hash", "output_hash", "code"),
    [
        ("0" * 64, None, "invalid_input_fingerprint"),
        (fingerprint({"amount": 5}), "f" * 64, "invalid_output_fingerprint"),
    ],
)
def test_a_stored_fingerprint_that_does_not_match_its_payload_rejects_the_bundle(
    input_hash, output_hash, code
) -> None:
    trace = _hand_built(input_hash, output_hash)
    with ReplaySession.from_trace(trace), pytest.raises(ReplayMismatchError) as info:
        agents.charge_card(5)
    assert info.value.code == code
    assert "stepfork validate --verify-integrity" in info.value.recommendation
    assert agents.CALLS == []


def test_a_recorded_call_without_result_is_a_mismatch_not_a_live_call() -> None:
    trace = Trace(run_id="run_hand", agent_name="hand")
    trace.add(RunStart(id="e0", run_id="run_hand"))
    trace.add(ToolCall(id="e1", run_id="run_hand", parent_id="e0", name="charge_card", input={"amount": 5}))
    with ReplaySession.from_trace(trace) as replay, pytest.raises(ReplayMismatchError) as info:
        agents.charge_card(5)
    assert info.value.code == "missing_result"
    assert replay.calls[0].status == EventStatus.SKIPPED
    assert agents.CALLS == []


def test_secrets_in_the_live_input_are_redacted_before_comparing_and_in_previews(recorder) -> None:
    secret = "sk-live0123456789abcdefghijKLMN"
    path = recorder(lambda: search_docs("q", {"note": f"Bearer {secret}"}))
    with ReplaySession.from_trace(path) as replay:
        search_docs("q", {"note": f"Bearer {secret}"})
        with pytest.raises(ReplayExhaustedError) as info:
            search_docs(secret, {})
    assert secret not in str(info.value)
    assert secret not in info.value.diagnostic.actual_input
    assert secret not in canonical_json(replay.executed_calls[0].input).decode()
