"""Issue 12, "Concurrency that holds": the default ``auto`` ordering is exact for calls recorded one after
another and tolerant only where the recording proves concurrency (interleaved lines, overlapping times, or
calls spawned into thread-pool threads / asyncio tasks, per concurrency.json)."""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.replay.ordering import auto_groups
from stepfork.trace import Trace, record, trace_tool
from stepfork.trace.concurrency import facts_of
from stepfork.trace.integrity import write_integrity


@trace_tool
def lookup(key: str) -> str:
    return f"value-{key}"


@trace_tool
async def alookup(key: str) -> str:
    return f"value-{key}"


def pool_sequential(keys: list[str]) -> list[str]:
    """Each call on a pool thread, one after the other (never overlapping): what a thread pool of fast
    tools records, and what a replay may see in any order."""
    out = []
    with ThreadPoolExecutor(max_workers=3) as pool:
        for key in keys:
            out.append(pool.submit(contextvars.copy_context().run, lookup, key).result())
    return out


def loop_sequential(keys: list[str]) -> list[str]:
    return [lookup(key) for key in keys]


def _record(path: Path, function, keys: list[str]) -> Path:  # type: ignore[no-untyped-def]
    with record("agent", output=path):
        function(keys)
    return path


def _replay(path: Path, function, keys: list[str], **options: str) -> list[str]:  # type: ignore[no-untyped-def]
    with ReplaySession.from_trace(path, **options) as session:
        result = function(keys)
    session.verify_complete()
    return result  # type: ignore[no-any-return]


def test_pool_calls_recorded_one_after_another_replay_in_any_order_by_default(tmp_path: Path) -> None:
    path = _record(tmp_path / "pool.sftrace", pool_sequential, ["a", "b", "c"])
    trace = Trace.load(path)
    assert facts_of(trace) is not None
    assert _replay(path, pool_sequential, ["c", "a", "b"]) == ["value-c", "value-a", "value-b"]
    with pytest.raises(ReplayMismatchError):
        _replay(path, pool_sequential, ["c", "a", "b"], ordering="strict")


def test_a_sequential_loop_stays_exact_by_default(tmp_path: Path) -> None:
    path = _record(tmp_path / "loop.sftrace", loop_sequential, ["a", "b", "c"])
    assert _replay(path, loop_sequential, ["a", "b", "c"]) == ["value-a", "value-b", "value-c"]
    with pytest.raises(ReplayMismatchError) as info:
        _replay(path, loop_sequential, ["b", "a", "c"])
    assert info.value.index == 0


def test_a_loop_call_between_two_fan_outs_is_a_fence(tmp_path: Path) -> None:
    def agent(keys: list[str]) -> list[str]:
        first = pool_sequential(keys[:2])
        middle = [lookup("mid")]
        return first + middle + pool_sequential(keys[2:])

    path = _record(tmp_path / "fence.sftrace", agent, ["a", "b", "c", "d"])
    trace = Trace.load(path)
    session = ReplaySession(trace)
    assert auto_groups(session.calls, facts_of(trace)) == [(0, 2), (2, 3), (3, 5)]
    expected = ["value-b", "value-a", "value-mid", "value-d", "value-c"]
    assert _replay(path, agent, ["b", "a", "d", "c"]) == expected


def test_gather_tasks_replay_in_any_order_by_default_even_when_their_calls_never_overlapped(
    tmp_path: Path,
) -> None:
    async def task(key: str, delay: int) -> str:
        for _ in range(delay):  # the tasks are alive together; each call is over before the next starts
            await asyncio.sleep(0)
        return await alookup(key)  # type: ignore[no-any-return]

    async def fan_out(keys: list[str]) -> list[str]:
        return list(await asyncio.gather(*(task(key, n) for n, key in enumerate(keys))))

    path = tmp_path / "gather.sftrace"

    async def rec() -> None:
        async with record("agent", output=path):
            await fan_out(["a", "b", "c"])

    asyncio.run(rec())

    async def rep(**options: str) -> list[str]:
        async with ReplaySession.from_trace(path, **options) as session:
            result = await fan_out(["c", "b", "a"])
        session.verify_complete()
        return result

    trace = Trace.load(path)
    assert auto_groups(ReplaySession(trace).calls, facts_of(trace)) == [(0, 3)]
    assert asyncio.run(rep()) == ["value-c", "value-b", "value-a"]
    with pytest.raises(ReplayMismatchError):
        asyncio.run(rep(ordering="strict"))


def test_tasks_run_one_after_another_stay_exact(tmp_path: Path) -> None:
    async def agent(keys: list[str]) -> list[str]:
        out = []
        for key in keys:  # a framework running each step in a fresh task, awaited before the next
            out.append(await asyncio.create_task(alookup(key)))
        return out

    path = tmp_path / "steps.sftrace"

    async def rec() -> None:
        async with record("agent", output=path):
            await agent(["a", "b"])

    asyncio.run(rec())
    trace = Trace.load(path)
    assert auto_groups(ReplaySession(trace).calls, facts_of(trace)) == [(0, 1), (1, 2)]


def test_without_concurrency_facts_only_interleaved_lines_prove_concurrency(tmp_path: Path) -> None:
    path = _record(tmp_path / "old.sftrace", pool_sequential, ["a", "b", "c"])
    (path / "concurrency.json").unlink()  # a bundle written before issue 12: no facts, none listed
    write_integrity(path)
    assert facts_of(Trace.load(path)) is None
    with pytest.raises(ReplayMismatchError):
        _replay(path, pool_sequential, ["c", "a", "b"])
    replayed = _replay(path, pool_sequential, ["c", "a", "b"], ordering="unordered")
    assert replayed == ["value-c", "value-a", "value-b"]


def test_a_gather_wider_than_the_alive_bound_replays_in_another_order_by_default(tmp_path: Path) -> None:
    # 100 tasks alive together, more than MAX_ALIVE (64) can list per call: the bound keeps the tasks of
    # the neighbouring calls, which are the ones the auto ordering compares, so the fan-out is one group.
    async def task(key: str, delay: int) -> str:
        for _ in range(delay % 3):  # calls spread over loop iterations, never overlapping
            await asyncio.sleep(0)
        return await alookup(key)  # type: ignore[no-any-return]

    async def fan_out(keys: list[str]) -> list[str]:
        return list(await asyncio.gather(*(task(key, n) for n, key in enumerate(keys))))

    keys = [f"k{n}" for n in range(100)]
    path = tmp_path / "wide.sftrace"

    async def rec() -> None:
        async with record("agent", output=path):
            await fan_out(keys)

    asyncio.run(rec())
    trace = Trace.load(path)
    facts = facts_of(trace)
    assert facts is not None
    assert max(len(f.alive) for f in facts.calls.values()) == 64
    assert auto_groups(ReplaySession(trace).calls, facts) == [(0, 100)]

    async def rep() -> list[str]:
        async with ReplaySession.from_trace(path) as session:
            result = await fan_out(list(reversed(keys)))
        session.verify_complete()
        return result

    assert asyncio.run(rep()) == [f"value-{key}" for key in reversed(keys)]
