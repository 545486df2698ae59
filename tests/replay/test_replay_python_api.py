"""Spec replay.txt, "Python API": record then replay round trips, sync and async, path or Trace."""

from __future__ import annotations

import asyncio
import os

import pytest
import replay_agents as agents

import stepfork
from stepfork.replay import ReplayError, ReplayMismatchError, ReplaySession, active_replay
from stepfork.trace import Trace


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    agents.CALLS.clear()


def test_frozen_replay_of_a_path_returns_the_recorded_results_without_running_bodies(recorder) -> None:
    path = recorder(agents.booking_agent)
    agents.CALLS.clear()
    with ReplaySession.from_trace(path) as replay:
        result = agents.booking_agent()
        replay.verify_complete()
    assert result == {"booked": "Paris-B"}
    assert agents.CALLS == []
    assert [c.label for c in replay.executed_calls] == ["search_flights", "openai/gpt-test", "book_flight"]
    assert [c.action for c in replay.executed_calls] == ["substituted"] * 3
    assert replay.pending == 0


def test_from_trace_accepts_an_in_memory_trace(recorder) -> None:
    trace = Trace.load(recorder(agents.booking_agent))
    with ReplaySession.from_trace(trace) as replay:
        assert agents.booking_agent() == {"booked": "Paris-B"}
    assert replay.trace is trace


def test_async_agent_replays_with_async_with(recorder) -> None:
    path = recorder.run_async(agents.async_booking_agent)
    agents.CALLS.clear()

    async def main() -> dict:
        async with ReplaySession.from_trace(path) as replay:
            result = await agents.async_booking_agent()
            replay.verify_complete()
        return result

    assert asyncio.run(main()) == {"booked": "Paris-A"}
    assert agents.CALLS == []


def test_the_active_session_is_visible_in_nested_tasks(recorder) -> None:
    path = recorder.run_async(agents.async_booking_agent)

    async def main() -> None:
        async with ReplaySession.from_trace(path) as replay:
            task = asyncio.create_task(agents.async_booking_agent())
            await task
            assert active_replay() is replay
            replay.verify_complete()

    asyncio.run(main())
    assert active_replay() is None


def test_entering_a_session_twice_raises_replay_error(recorder) -> None:
    replay = ReplaySession.from_trace(recorder(agents.booking_agent))
    with replay, pytest.raises(ReplayError) as info, replay:
        pass
    assert info.value.code == "reentered"


def test_exiting_does_not_verify_completeness(recorder) -> None:
    path = recorder(agents.booking_agent)
    with ReplaySession.from_trace(path) as replay:
        agents.search_flights("Paris")
    assert replay.pending == 2
    assert replay.summary.remaining == ("openai/gpt-test", "book_flight")


def test_a_call_from_a_thread_without_the_context_is_served_with_a_warning_and_still_checked(
    recorder,
) -> None:
    import threading

    from stepfork.trace import OrphanCallWarning

    path = recorder(agents.booking_agent)
    agents.CALLS.clear()
    results: list[object] = []
    errors: list[BaseException] = []

    def worker(city: str) -> None:
        try:
            results.append(agents.search_flights(city))
        except BaseException as exc:
            errors.append(exc)

    # The only replay session in the process serves the orphan call through the same checks as any call
    # (docs/decisions.md): the recorded output comes back, the body never runs, and a warning says so.
    def in_a_bare_thread(city: str) -> None:
        thread = threading.Thread(target=worker, args=(city,))
        thread.start()
        thread.join()

    with (
        ReplaySession.from_trace(path) as replay,
        pytest.warns(OrphanCallWarning, match="without the replay's context") as warned,
    ):
        in_a_bare_thread("Paris")
    # the agent's call (tests/replay/agents.py), not a line of Stepfork's
    ours = tuple(os.path.join(p, "") for p in stepfork.__path__)
    assert not any(w.filename.startswith(ours) for w in warned), [w.filename for w in warned]
    assert errors == []
    assert len(results) == 1
    assert agents.CALLS == []
    assert replay.divergence is None
    assert replay.matched[0].label == "search_flights"

    # An orphan call that does not match the recording still diverges before its body runs.
    with ReplaySession.from_trace(path) as replay, pytest.warns(OrphanCallWarning):
        in_a_bare_thread("Rome")
    assert len(errors) == 1
    assert isinstance(errors[0], ReplayMismatchError)
    assert agents.CALLS == []
    assert replay.divergence is errors[0]


def test_consumed_call_records_are_built_on_read_and_stay_the_same_objects_as_the_run_goes_on(
    recorder,
) -> None:
    path = recorder(agents.booking_agent)
    agents.CALLS.clear()
    with ReplaySession.from_trace(path) as replay:
        assert (replay.matched, replay.executed_calls, replay.summary.matched) == ([], (), ())
        assert (replay.consumed, replay.last_consumed_index) == (0, None)
        flights = agents.search_flights("Paris")
        first_matched, first_executed = replay.matched[0], replay.executed_calls[0]
        choice = agents.pick(flights)
        assert (replay.consumed, replay.last_consumed_index) == (2, 1)
        agents.book_flight(choice["pick"])
        replay.verify_complete()
    assert (replay.consumed, replay.last_consumed_index) == (3, 2)
    assert [(m.index, m.label, m.action) for m in replay.matched] == [
        (0, "search_flights", "substituted"),
        (1, "openai/gpt-test", "substituted"),
        (2, "book_flight", "substituted"),
    ]
    assert replay.matched[0] is first_matched
    assert replay.executed_calls[0] is first_executed
    assert replay.summary.matched == tuple(replay.matched)
    assert [(c.input, c.status, c.step) for c in replay.executed_calls][::2] == [
        ({"city": "Paris", "limit": 10}, "ok", replay.calls[0].step),
        ({"flight": "Paris-B"}, "ok", replay.calls[2].step),
    ]
    assert agents.CALLS == []
