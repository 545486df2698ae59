"""Replaying the reference implementation's golden bundles with small entrypoints (interop).

Their parent_ids chain every event to the previous one; nesting is decided by time (DESIGN.md "Which
calls replay sees"), so they replay as the flat runs they are. Our recomputed fingerprints of the live
inputs must equal the recorded ones.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepfork.replay import (
    RecordedDependencyError,
    ReplayMismatchError,
    ReplaySession,
    extract_recorded_calls,
    replay_entrypoint,
)
from stepfork.trace import Trace, fingerprint, llm_request, trace_tool

from .conftest import golden

RAN: list[str] = []


@trace_tool
def weather_lookup(city: str) -> dict[str, Any]:
    RAN.append("weather_lookup")
    return {}


@trace_tool
def flight_search(query: str, api_key: str) -> dict[str, Any]:
    RAN.append("flight_search")
    return {}


@trace_tool
def search(query: str) -> Any:
    RAN.append("search")
    return None


def weather_agent() -> dict[str, Any]:
    decision = llm_request(
        model="gpt-test",
        input={"messages": [{"role": "user", "content": "Find Kathmandu weather"}]},
        call=lambda: RAN.append("llm"),
    )
    report = weather_lookup(city="Kathmandu") if decision["tool"] == "weather_lookup" else {}
    return {"answer": f"{report['condition'].capitalize()} and {report['temperature_c']}C"}


def flight_agent() -> dict[str, Any]:
    return flight_search(query="Kathmandu flights", api_key="live-key-123")


def drafting_agent() -> Any:
    return llm_request(
        model="gpt-test",
        input={"messages": [{"role": "user", "content": "Draft response"}]},
        call=lambda: None,
    )


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def _recorded_input_hashes(name: str) -> list[str]:
    trace = Trace.load(golden(name))
    return [e.input_hash for e in trace.events if e.type in ("tool_call", "llm_request")]


def test_successful_run_replays_flat_and_matches_the_recorded_output() -> None:
    trace = Trace.load(golden("successful_run"))
    assert [c.label for c in extract_recorded_calls(trace)] == ["gpt-test", "weather_lookup"]
    with ReplaySession.from_trace(trace) as replay:
        result = weather_agent()
        replay.verify_complete()
    assert result == {"answer": "Clear and 22C"}
    assert RAN == []
    assert [fingerprint(c.input) for c in replay.executed_calls] == _recorded_input_hashes("successful_run")
    outcome = replay_entrypoint(golden("successful_run"), weather_agent)
    assert (outcome.matching.status, outcome.behavior.status, outcome.exit_code) == ("COMPLETE", "MATCHED", 0)


def test_failed_tool_run_raises_the_recorded_failure_with_the_api_key_redacted_before_matching() -> None:
    with ReplaySession.from_trace(golden("failed_tool_run")) as replay:
        with pytest.raises(RecordedDependencyError) as info:
            flight_agent()
        replay.verify_complete()
    err = info.value
    assert (err.kind, err.name, err.error_type, err.message) == (
        "tool",
        "flight_search",
        "ToolTimeout",
        "flight_search timed out",
    )
    assert err.details == {"retryable": True}
    assert replay.executed_calls[0].input == {"api_key": "[REDACTED]", "query": "Kathmandu flights"}
    assert [fingerprint(c.input) for c in replay.executed_calls] == _recorded_input_hashes("failed_tool_run")
    assert RAN == []
    outcome = replay_entrypoint(golden("failed_tool_run"), flight_agent)
    assert (outcome.behavior.status, outcome.exit_code) == ("REPRODUCED FAILURE", 0)


def test_failed_llm_run_raises_the_recorded_llm_error() -> None:
    with ReplaySession.from_trace(golden("failed_llm_run")) as replay:
        with pytest.raises(RecordedDependencyError) as info:
            drafting_agent()
        replay.verify_complete()
    assert (info.value.kind, info.value.error_type, info.value.message) == (
        "llm",
        "LLMError",
        "model unavailable",
    )
    assert [fingerprint(c.input) for c in replay.executed_calls] == _recorded_input_hashes("failed_llm_run")
    outcome = replay_entrypoint(golden("failed_llm_run"), drafting_agent)
    assert (outcome.behavior.status, outcome.exit_code) == ("REPRODUCED FAILURE", 0)


def test_legacy_bundle_matches_the_input_fingerprint_and_reports_the_missing_result() -> None:
    with ReplaySession.from_trace(golden("legacy_v01")), pytest.raises(ReplayMismatchError) as info:
        search(query="Legacy query")
    assert info.value.code == "missing_result"
    d = info.value.diagnostic
    assert (
        d.actual_input_fingerprint == d.expected_input_fingerprint == _recorded_input_hashes("legacy_v01")[0]
    )
    assert RAN == []


def test_a_changed_golden_entrypoint_diverges_with_exit_code_1() -> None:
    def changed() -> Any:
        return weather_lookup(city="Pokhara")

    outcome = replay_entrypoint(golden("successful_run"), changed)
    assert outcome.matching.status == "DIVERGED"
    assert outcome.matching.code == "kind_mismatch"
    assert outcome.exit_code == 1
