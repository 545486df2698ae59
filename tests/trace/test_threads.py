"""Concurrency while recording (C6): asyncio tasks, threads with and without the context, orphan calls."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import warnings
from pathlib import Path
from typing import Any

from stepfork.trace import BoundaryContextError, OrphanCallWarning, Trace, record, trace_tool
from stepfork.trace.canonical import loads_json


@trace_tool
async def weather(city: str) -> dict[str, Any]:
    await asyncio.sleep(0)  # yield to the other tasks so their events interleave in time
    return {"city": city, "temp": 20}


@trace_tool
async def news() -> list[str]:
    await asyncio.sleep(0)
    return ["headline"]


@trace_tool
async def plan() -> list[Any]:
    return list(await asyncio.gather(weather("Oslo"), weather("Lima")))


@trace_tool
def ping(n: int) -> int:
    return n


def lines(path: Path) -> list[dict[str, Any]]:
    return [loads_json(line) for line in (path / "events.jsonl").read_bytes().splitlines()]


def test_gathered_calls_are_all_recorded_each_result_under_its_own_call(tmp_path: Path) -> None:
    out = tmp_path / "gather.sftrace"

    async def main() -> None:
        async with record("gather", output=out):
            await asyncio.gather(weather("NYC"), weather("SF"), news())

    asyncio.run(main())
    events = lines(out)
    calls = [e for e in events if e["type"] == "tool_call"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert sorted(c["input"].get("city", "-") for c in calls) == ["-", "NYC", "SF"]
    assert all(c["parent_id"] == events[0]["id"] for c in calls)
    call_by_id = {c["id"]: c for c in calls}
    for result in results:
        call = call_by_id[result["parent_id"]]
        assert result["name"] == call["name"]
        if call["name"] == "weather":
            assert result["output"]["city"] == call["input"]["city"]
    assert len(results) == 3
    assert Trace.load(out).totals.tool_calls == 3


def test_tasks_gathered_inside_a_tool_nest_under_that_tool(tmp_path: Path) -> None:
    out = tmp_path / "nested.sftrace"

    async def main() -> None:
        async with record("nested", output=out):
            await plan()

    asyncio.run(main())
    events = lines(out)
    plan_call = next(e for e in events if e["type"] == "tool_call" and e["name"] == "plan")
    weather_calls = [e for e in events if e["type"] == "tool_call" and e["name"] == "weather"]
    assert len(weather_calls) == 2
    assert all(w["parent_id"] == plan_call["id"] for w in weather_calls)


def test_threads_with_a_copied_context_lose_no_event_and_never_interleave_lines(tmp_path: Path) -> None:
    out = tmp_path / "threads.sftrace"
    threads_n, calls_n = 8, 40
    with record("threads", output=out):
        workers = []
        for t in range(threads_n):
            ctx = contextvars.copy_context()
            workers.append(
                threading.Thread(
                    target=ctx.run, args=(lambda t=t: [ping(t * 1000 + i) for i in range(calls_n)],)
                )
            )
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    events = lines(out)  # every line parses: nothing interleaved
    assert [e["step"] for e in events] == list(range(len(events)))
    inputs = sorted(e["input"]["n"] for e in events if e["type"] == "tool_call")
    assert inputs == sorted(t * 1000 + i for t in range(threads_n) for i in range(calls_n))
    assert sum(e["type"] == "tool_result" for e in events) == threads_n * calls_n


def test_a_call_from_a_thread_without_the_context_is_recorded_under_the_run_and_warned_once(
    tmp_path: Path,
) -> None:
    out = tmp_path / "orphan.sftrace"
    caught: list[warnings.WarningMessage] = []

    def orphan_work() -> None:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ping(1)
            ping(2)
        caught.extend(seen)

    with record("orphan", output=out):
        worker = threading.Thread(target=orphan_work)  # no copy_context: an orphan
        worker.start()
        worker.join()
    orphan_warnings = [w for w in caught if issubclass(w.category, OrphanCallWarning)]
    assert len(orphan_warnings) == 1
    assert orphan_warnings[0].filename == __file__  # the user's call, not a line of Stepfork's
    events = lines(out)
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [c["input"]["n"] for c in calls] == [1, 2]
    assert all(c["parent_id"] == events[0]["id"] for c in calls)


def test_an_orphan_call_with_two_sessions_active_raises_boundary_context_error(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def second_session() -> None:
        with record("second", output=tmp_path / "second.sftrace"):
            entered.set()
            release.wait()

    errors: list[BaseException] = []

    def orphan() -> None:
        try:
            ping(3)
        except BaseException as exc:
            errors.append(exc)

    with record("first", output=tmp_path / "first.sftrace"):
        other = threading.Thread(target=second_session)
        other.start()
        entered.wait()
        try:
            worker = threading.Thread(target=orphan)
            worker.start()
            worker.join()
        finally:
            release.set()
            other.join()
    assert len(errors) == 1
    assert isinstance(errors[0], BoundaryContextError)
    assert errors[0].code == "boundary_context"
    for name in ("first", "second"):
        assert not any(e["type"] == "tool_call" for e in lines(tmp_path / f"{name}.sftrace"))


def test_after_the_session_ends_calls_from_any_thread_run_untouched(tmp_path: Path) -> None:
    with record("done", output=tmp_path / "done.sftrace"):
        pass
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(ping(5)))
    worker.start()
    worker.join()
    assert result == [5]
