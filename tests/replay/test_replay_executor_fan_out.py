"""Replay of a tool that fans out to a thread pool (stepfork.trace.executors, NEWCOMER2 finding 2).

The pool's calls were recorded under the tool that submitted them, so a replay serving the tool expects
none of them: the tool is served once, its fan-out is not run and not missing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from stepfork.replay import ReplaySession
from stepfork.trace import record, trace_tool


@trace_tool
def lookup(key: str) -> str:
    return f"value-{key}"


@trace_tool
def fan_out(keys: list[str]) -> list[str]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lookup, keys))


def test_a_served_tool_expects_none_of_its_pool_calls(tmp_path: Path) -> None:
    path = tmp_path / "fan.sftrace"
    with record("fan", output=path):
        assert fan_out(["a", "b", "c"]) == ["value-a", "value-b", "value-c"]
    with ReplaySession.from_trace(path) as replay:
        assert fan_out(["a", "b", "c"]) == ["value-a", "value-b", "value-c"]
    replay.verify_complete()
    assert [call.label for call in replay.executed_calls] == ["fan_out"]
