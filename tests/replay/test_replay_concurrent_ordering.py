"""Issue 6, "Concurrency": the ``concurrent`` ordering against the ``strict`` cursor (the default is
``auto`` since issue 12: tests/replay/test_replay_auto_ordering.py).

The fan-out is made deterministic with ``asyncio.Event`` gates (no sleeps): the test chooses the order in
which the tasks make their ``fetch`` calls, and during recording the bodies finish in the reverse of the
order they started, so the recorded completion order differs from every replay arrival order used here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from stepfork.replay import ReplayExhaustedError, ReplayMismatchError, ReplaySession, run_regression_case
from stepfork.replay.plan import concurrent_groups, extract_recorded_calls
from stepfork.trace import Trace, trace_tool
from stepfork.trace.models import EventType


class FanOut:
    """One asyncio task per item, each calling ``fetch(item)``; ``order`` (task positions) is the order
    in which the tasks make their calls. Recorded bodies wait until all have started, then finish in the
    reverse of their start order; each returns ``"<item>-<n>"``, n its 1-based start number."""

    def __init__(self, items: list[str]) -> None:
        self.items = items
        self.bodies: list[str] = []
        self.releases: list[asyncio.Event] = []

        @trace_tool(name="fetch")
        async def fetch(item: str) -> str:
            self.bodies.append(item)
            number = len(self.bodies)
            release = asyncio.Event()
            self.releases.append(release)
            if len(self.releases) == len(self.items):
                for event in reversed(self.releases):
                    event.set()
            await release.wait()
            return f"{item}-{number}"

        self.fetch = fetch

    async def run(self, order: list[int]) -> list[str]:
        gates = [asyncio.Event() for _ in self.items]

        async def task(position: int) -> str:
            await gates[position].wait()
            following = order.index(position) + 1
            if following < len(order):
                gates[order[following]].set()
            return await self.fetch(self.items[position])  # type: ignore[no-any-return]

        gates[order[0]].set()
        return list(await asyncio.gather(*(task(position) for position in range(len(self.items)))))


@trace_tool(name="fetch")
async def fetch_now(item: str) -> str:
    """A plain ``fetch`` that never suspends (bodies never run in a frozen replay)."""
    return f"{item}-now"


def record_fan_out(recorder: Any, items: list[str], order: list[int]) -> tuple[Path, list[str]]:
    fan_out = FanOut(items)
    path = recorder.run_async(lambda: fan_out.run(order), name="fan-out")
    return path, fan_out.bodies


def replay_fan_out(
    path: Path, items: list[str], order: list[int], ordering: str
) -> tuple[list[str], FanOut, ReplaySession]:
    fan_out = FanOut(items)

    async def main() -> tuple[list[str], ReplaySession]:
        async with ReplaySession.from_trace(path, ordering=ordering) as session:
            result = await fan_out.run(order)
        return result, session

    result, session = asyncio.run(main())
    return result, fan_out, session


def recorded_result_order(path: Path) -> list[str]:
    return [event.output for event in Trace.load(path).events if event.type == EventType.TOOL_RESULT]


def test_the_recording_completes_in_another_order_than_it_started(recorder) -> None:
    path, started = record_fan_out(recorder, ["a", "b", "c"], [0, 1, 2])
    assert started == ["a", "b", "c"]
    assert recorded_result_order(path) == ["c-3", "b-2", "a-1"]
    assert concurrent_groups(extract_recorded_calls(Trace.load(path))) == [(0, 3)]


def test_strict_ordering_rejects_a_gather_arriving_in_another_order_before_any_body_runs(recorder) -> None:
    path, _ = record_fan_out(recorder, ["a", "b", "c"], [0, 1, 2])
    with pytest.raises(ReplayMismatchError) as info:
        replay_fan_out(path, ["a", "b", "c"], [2, 0, 1], "strict")
    assert info.value.code == "input_diverged"
    assert info.value.index == 0
    assert info.value.diagnostic is not None
    assert info.value.diagnostic.difference is not None
    assert info.value.diagnostic.difference.path == "$.item"


def test_concurrent_ordering_replays_a_gather_whose_calls_arrive_in_another_order(recorder) -> None:
    path, _ = record_fan_out(recorder, ["a", "b", "c"], [0, 1, 2])
    result, fan_out, session = replay_fan_out(path, ["a", "b", "c"], [2, 0, 1], "concurrent")
    session.verify_complete()
    assert result == ["a-1", "b-2", "c-3"]  # each task got its own recorded output
    assert fan_out.bodies == []
    assert [call.input["item"] for call in session.executed_calls] == ["c", "a", "b"]
    assert [call.index for call in session.executed_calls] == [2, 0, 1]
    assert session.ordering == "concurrent"


def test_concurrent_ordering_serves_repeated_identical_calls_in_recorded_order(recorder) -> None:
    path, _ = record_fan_out(recorder, ["a", "a", "b"], [0, 1, 2])
    result, _, session = replay_fan_out(path, ["a", "a", "b"], [2, 1, 0], "concurrent")
    session.verify_complete()
    # task 1 asks first for "a": it gets the first recorded "a" (a-1), task 0 the second (a-2)
    assert result == ["a-2", "a-1", "b-3"]


def test_concurrent_ordering_keeps_the_order_of_sequential_calls(recorder) -> None:
    async def sequential(items: list[str]) -> list[str]:
        return [await fetch_now(item) for item in items]

    path = recorder.run_async(lambda: sequential(["a", "b"]), name="sequential")
    assert concurrent_groups(extract_recorded_calls(Trace.load(path))) == [(0, 1), (1, 2)]

    async def main() -> None:
        async with ReplaySession.from_trace(path, ordering="concurrent"):
            await sequential(["b", "a"])

    with pytest.raises(ReplayMismatchError) as info:
        asyncio.run(main())
    assert info.value.code == "input_diverged"
    assert info.value.index == 0


def test_unordered_ordering_replays_sequential_siblings_in_another_order(recorder) -> None:
    # what free-running threads look like in a recording: short sibling calls that never overlap
    async def sequential(items: list[str]) -> list[str]:
        return [await fetch_now(item) for item in items]

    path = recorder.run_async(lambda: sequential(["a", "b", "c"]), name="sequential")
    calls = extract_recorded_calls(Trace.load(path))
    assert concurrent_groups(calls, overlap=False) == [(0, 3)]

    async def main(items: list[str]) -> tuple[list[str], ReplaySession]:
        async with ReplaySession.from_trace(path, ordering="unordered") as session:
            return await sequential(items), session

    result, session = asyncio.run(main(["c", "a", "b"]))
    session.verify_complete()
    assert result == ["c-now", "a-now", "b-now"]  # each call got its own recorded output
    with pytest.raises(ReplayMismatchError) as info:
        asyncio.run(main(["c", "d", "b"]))  # a call that was never recorded still diverges
    assert info.value.code == "input_diverged"


def test_concurrent_ordering_rejects_a_call_matching_no_member_of_the_group(recorder) -> None:
    path, _ = record_fan_out(recorder, ["a", "b", "c"], [0, 1, 2])

    async def main() -> None:
        async with ReplaySession.from_trace(path, ordering="concurrent"):
            await asyncio.gather(fetch_now("b"), fetch_now("z"), fetch_now("a"))

    with pytest.raises(ReplayMismatchError) as info:
        asyncio.run(main())
    assert info.value.code == "input_diverged"
    assert info.value.index == 0  # checked against the earliest unconsumed call of that name
    assert info.value.diagnostic is not None
    assert info.value.diagnostic.difference is not None
    assert info.value.diagnostic.difference.actual == "z"


def test_concurrent_ordering_still_requires_every_recorded_call(recorder) -> None:
    path, _ = record_fan_out(recorder, ["a", "b", "c"], [0, 1, 2])

    async def main() -> ReplaySession:
        async with ReplaySession.from_trace(path, ordering="concurrent") as session:
            await asyncio.gather(fetch_now("c"), fetch_now("a"))
        return session

    session = asyncio.run(main())
    assert session.pending == 1
    with pytest.raises(ReplayExhaustedError) as info:
        session.verify_complete()
    assert info.value.code == "incomplete"
    assert info.value.remaining == ("fetch",)
    assert info.value.index == 1  # the unconsumed "b"


def test_run_regression_case_accepts_the_concurrent_ordering(recorder) -> None:
    path, _ = record_fan_out(recorder, ["a", "b", "c"], [0, 1, 2])

    async def entrypoint() -> list[str]:
        return list(await asyncio.gather(fetch_now("b"), fetch_now("c"), fetch_now("a")))

    assert run_regression_case(entrypoint, path, ordering="concurrent", expectation=["b-2", "c-3", "a-1"])
    with pytest.raises(AssertionError, match="divergence"):
        run_regression_case(entrypoint, path, ordering="strict", expectation=["b-2", "c-3", "a-1"])


def test_an_unknown_ordering_is_a_value_error_naming_the_valid_ones(recorder) -> None:
    path, _ = record_fan_out(recorder, ["a"], [0])
    with pytest.raises(ValueError, match="auto, strict, concurrent, unordered"):
        ReplaySession.from_trace(path, ordering="any")
