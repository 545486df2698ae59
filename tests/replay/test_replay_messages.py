"""Spec wording of the replay divergence messages (cli-reference.txt "replay", Common errors).

The messages start with the spec's phrases (calls numbered from 1, as the CLI's "Dependency Calls" list);
the detail follows; the structured fields keep the 0-based index of the reference API.
"""

from __future__ import annotations

import pytest
from replay_agents import booking_agent, search_flights

from stepfork.replay import ReplayExhaustedError, ReplayMismatchError, ReplaySession
from stepfork.trace import trace_tool


def test_an_input_divergence_reads_call_1_input_diverged_from_the_recording(recorder) -> None:
    path = recorder(lambda: booking_agent("Paris"))
    with ReplaySession.from_trace(path) as session, pytest.raises(ReplayMismatchError) as info:
        booking_agent("Rome")
    error = info.value
    assert error.code == "input_diverged"
    assert error.index == 0
    assert error.path == "$.city"
    assert error.summary == (
        f"call #1: input diverged from the recording at $.city (tool 'search_flights', step {error.step})"
    )
    # str() is the headline, then the detail lines (tests/e2e/test_mismatch_messages.py shows them all)
    assert str(error).splitlines()[0] == error.summary
    assert '    $.city (first): expected "Paris" (string), actual "Rome" (string)' in str(error)
    assert session.divergence is error


def test_a_later_call_is_numbered_from_1_and_other_mismatches_share_the_prefix(recorder) -> None:
    path = recorder(lambda: booking_agent("Paris"))
    with ReplaySession.from_trace(path):
        search_flights("Paris")
        with pytest.raises(ReplayMismatchError) as info:
            search_flights("Paris")  # the recording has the LLM call here
    assert info.value.code == "kind_mismatch"
    assert info.value.index == 1
    assert str(info.value).startswith("call #2: ")


def test_verify_complete_reads_replay_ended_before_consuming_n_recorded_dependency_calls(recorder) -> None:
    path = recorder(lambda: booking_agent("Paris"))
    with ReplaySession.from_trace(path) as session:
        search_flights("Paris")
    with pytest.raises(ReplayExhaustedError) as info:
        session.verify_complete()
    assert info.value.code == "incomplete"
    assert len(info.value.remaining) == 2
    assert str(info.value).startswith("replay ended before consuming 2 recorded dependency call(s): ")
    assert info.value.index == 1


@trace_tool
def get_weather(city: str) -> str:
    return f"{city}: sunny"


def test_a_tool_no_recorded_call_names_is_refused_with_the_re_record_hint(recorder) -> None:
    """A framework tool of a bundle recorded before framework tools were recorded (docs/decisions.md,
    "Framework tools"): its call comes where the recording has none of that name."""
    path = recorder(lambda: booking_agent("Paris"))
    with ReplaySession.from_trace(path), pytest.raises(ReplayMismatchError) as info:
        get_weather("Paris")
    assert info.value.code == "name_mismatch"
    assert info.value.diagnostic is not None
    hint = info.value.diagnostic.hint or ""
    assert hint.startswith("the recording holds no call of tool 'get_weather', so it is refused, not run")
    assert hint.endswith("record the run again")
    assert "hint: the recording holds no call of tool 'get_weather'" in str(info.value)

    with ReplaySession.from_trace(path):
        search_flights("Paris")
        with pytest.raises(ReplayMismatchError) as info:
            search_flights("Paris")  # a tool the recording holds, out of its place: the order hint
    assert (info.value.diagnostic.hint or "").startswith("the agent calls tool 'search_flights' where")
