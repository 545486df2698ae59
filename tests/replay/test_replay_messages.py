"""Spec wording of the replay divergence messages (cli-reference.txt "replay", Common errors).

The messages start with the spec's phrases (calls numbered from 1, as the CLI's "Dependency Calls" list);
the detail follows; the structured fields keep the 0-based index of the reference API.
"""

from __future__ import annotations

import pytest
from replay_agents import booking_agent, search_flights

from stepfork.replay import ReplayExhaustedError, ReplayMismatchError, ReplaySession


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
