"""Work submitted to a thread pool under a session runs in it (stepfork.trace.executors).

Calls made by the work are the agent's: recorded under the call that submitted it (a tool's fan-out nests
in the tool, so a replay serving the tool expects none of them), never orphans, ``background: false``. Only
Stepfork's own context variables travel; the worker gets its own back when the work ends; work still
running when the recording ends runs on untouched. Replay of the fan-out:
tests/replay/test_replay_executor_fan_out.py. Runs with stepfork-trace alone (.ci/run).
"""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path

from stepfork.trace import OrphanCallWarning, Trace, record, trace_tool
from stepfork.trace.boundary import active_handler
from stepfork.trace.concurrency import ConcurrencyFacts, facts_of


@trace_tool
def lookup(key: str) -> str:
    return f"value-{key}"


@trace_tool
def fan_out(keys: list[str]) -> list[str]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lookup, keys))


def _tool_calls(trace: Trace) -> list[object]:
    return [event for event in trace.events if str(event.type) == "tool_call"]


def test_pool_calls_nest_under_the_call_that_submitted_them_and_are_the_agents(tmp_path: Path) -> None:
    path = tmp_path / "fan.sftrace"
    with warnings.catch_warnings():
        warnings.simplefilter("error", OrphanCallWarning)  # not one call arrives without the context
        with record("fan", output=path):
            assert fan_out(["a", "b", "c"]) == ["value-a", "value-b", "value-c"]
    trace = Trace.load(path)
    fan, *looked_up = _tool_calls(trace)
    assert [call.name for call in looked_up] == ["lookup"] * 3  # type: ignore[attr-defined]
    assert {call.parent_id for call in looked_up} == {fan.id}  # type: ignore[attr-defined]
    facts = facts_of(trace)
    assert facts is not None
    assert facts.submit_carries_context
    assert ConcurrencyFacts.parse(facts.to_json()).submit_carries_context  # type: ignore[union-attr]  # kept by subsets
    assert {facts.calls[call.id].background for call in [fan, *looked_up]} == {False}  # type: ignore[attr-defined]


def test_only_stepforks_variables_travel_and_the_worker_gets_its_own_back(tmp_path: Path) -> None:
    request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        with record("vars", output=tmp_path / "vars.sftrace") as session:
            request_id.set("req-1")
            seen = pool.submit(lambda: (request_id.get(), active_handler())).result()
        after = pool.submit(active_handler).result()  # the same worker thread, no session submitting
    finally:
        pool.shutdown()
    assert seen == (None, session)  # the agent's own variable behaves as without Stepfork
    assert after is None


def test_pool_work_still_running_when_the_recording_ends_runs_on_untouched(tmp_path: Path) -> None:
    path = tmp_path / "late.sftrace"
    started, gate = threading.Event(), threading.Event()

    def work() -> tuple[str, str]:
        early = lookup("early")
        started.set()
        gate.wait()
        return early, lookup("late")  # the session has ended: runs as with no session, never raises

    pool = ThreadPoolExecutor(max_workers=1)
    try:
        with record("late", output=path):
            future = pool.submit(work)
            started.wait()
        gate.set()
        assert future.result() == ("value-early", "value-late")
    finally:
        pool.shutdown()
    trace = Trace.load(path)
    calls = _tool_calls(trace)
    assert [call.input for call in calls] == [{"key": "early"}]  # type: ignore[attr-defined]
    facts = facts_of(trace)
    assert facts is not None
    assert facts.calls[calls[0].id].background is False  # type: ignore[attr-defined]
