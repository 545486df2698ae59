"""Issue 12, "Concurrency that holds": atomic id/timestamp/step, concurrency.json, the inversion warning."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from stepfork.trace import record, trace_tool
from stepfork.trace.bundle import read_extension
from stepfork.trace.canonical import loads_json
from stepfork.trace.concurrency import ConcurrencyFacts
from stepfork.trace.integrity import verify_bundle_integrity
from stepfork.trace.validation import TIMESTAMP_ORDER, validate_bundle


@trace_tool
def work(n: int) -> int:
    return n * 2


@trace_tool
async def fetch(city: str) -> str:
    await asyncio.sleep(0)
    return city.upper()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [loads_json(line) for line in (path / "events.jsonl").read_bytes().splitlines()]


def _stamp(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))


def _inversions(events: list[dict[str, Any]]) -> int:
    return sum(1 for a, b in itertools.pairwise(events) if _stamp(b) < _stamp(a))


def _threaded_run(path: Path) -> None:
    with record("threads", output=path, overwrite=True), ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(contextvars.copy_context().run, work, n) for n in range(8)]
        assert [f.result() for f in futures] == [n * 2 for n in range(8)]


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_eight_tools_on_four_threads_never_invert_line_and_timestamp_order(tmp_path: Path) -> None:
    total = 0
    for run in range(200):
        path = tmp_path / f"t{run % 2}.sftrace"
        _threaded_run(path)
        events = _lines(path)
        assert [e["step"] for e in events] == list(range(len(events)))
        total += _inversions(events)
    assert total == 0


def test_thread_pool_calls_get_lanes_and_intervals_in_an_integrity_listed_extension(tmp_path: Path) -> None:
    path = tmp_path / "threads.sftrace"
    _threaded_run(path)
    facts_json = read_extension(path, "concurrency")
    assert facts_json["format"] == "stepfork-concurrency/1"
    facts = ConcurrencyFacts.parse(facts_json)
    assert facts is not None
    calls = [e for e in _lines(path) if e["type"] == "tool_call"]
    assert {c["id"] for c in calls} == set(facts.calls)
    lanes = {facts.calls[c["id"]].lane for c in calls}
    assert facts.root_lane not in lanes  # every call ran on a pool thread, not the thread that recorded
    for fact in facts.calls.values():
        assert fact.end_us is not None
        assert fact.end_us >= fact.start_us
    assert "concurrency.json" in loads_json((path / "integrity.json").read_bytes())["files"]
    assert verify_bundle_integrity(path).status.value == "verified"
    assert validate_bundle(path, strict=True).valid


def test_gathered_tasks_each_get_their_own_lane(tmp_path: Path) -> None:
    path = tmp_path / "gather.sftrace"

    async def main() -> None:
        async with record("gather", output=path):
            await fetch("oslo")
            await asyncio.gather(fetch("a"), fetch("b"), fetch("c"))

    asyncio.run(main())
    facts = ConcurrencyFacts.parse(read_extension(path, "concurrency"))
    assert facts is not None
    calls = [e for e in _lines(path) if e["type"] == "tool_call"]
    lanes = [facts.calls[c["id"]].lane for c in calls]
    assert lanes[0] == facts.root_lane
    assert len(set(lanes[1:])) == 3
    assert facts.root_lane not in lanes[1:]


def test_concurrency_is_a_reserved_metadata_name(tmp_path: Path) -> None:
    with record("r", output=tmp_path / "r.sftrace") as session, pytest.raises(ValueError, match="reserved"):
        session.add_metadata("concurrency", {})


def test_validate_warns_on_a_timestamp_earlier_than_the_line_before(tmp_path: Path) -> None:
    path = tmp_path / "old.sftrace"
    with record("old", output=path):
        work(1)
        work(2)
    events_file = path / "events.jsonl"
    events = _lines(path)
    # what the pre-issue-12 recorder could write: a later line stamped before an earlier one
    events[2]["timestamp"], events[3]["timestamp"] = events[3]["timestamp"], "2000-01-01T00:00:00Z"
    from stepfork.trace.canonical import compact_json

    events_file.write_bytes(b"".join(compact_json(e) + b"\n" for e in events))
    result = validate_bundle(path, strict=True)
    codes = [w.code for w in result.warnings]
    assert TIMESTAMP_ORDER in codes
    warning = result.warnings[codes.index(TIMESTAMP_ORDER)]
    assert warning.event_id == events[3]["id"]
    fresh = tmp_path / "fresh.sftrace"
    with record("fresh", output=fresh):
        work(1)
    assert TIMESTAMP_ORDER not in [w.code for w in validate_bundle(fresh, strict=True).warnings]


def test_the_alive_tasks_are_listed_once_per_loop_iteration_not_once_per_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # asyncio.all_tasks() is O(tasks): taken per call, a gather of n tasks cost O(n^2) (issue 12 benchmark)
    path = tmp_path / "wide.sftrace"
    real = asyncio.all_tasks
    asked: list[int] = []

    def counting(loop: Any = None) -> set[asyncio.Task[Any]]:
        asked.append(1)
        return real(loop)

    monkeypatch.setattr(asyncio, "all_tasks", counting)

    async def main() -> None:
        async with record("wide", output=path):
            await asyncio.gather(*(fetch(f"c{n}") for n in range(50)))

    asyncio.run(main())
    monkeypatch.undo()
    assert 1 <= len(asked) <= 2  # the 50 calls start in one loop iteration
    facts = ConcurrencyFacts.parse(read_extension(path, "concurrency"))
    assert facts is not None
    tasks = {facts.task_of(f.lane) for f in facts.calls.values()}
    for fact in facts.calls.values():
        assert facts.task_of(fact.lane) not in fact.alive  # never the caller itself
        assert tasks - {facts.task_of(fact.lane)} <= fact.alive  # every sibling, alive together
