"""diff and concurrency that scheduling proves in one recording only (openai2 CI failure on de814a2).

LlamaIndex's ``FunctionAgent`` runs a model's two tool calls in tasks of their own. In one run the tasks
overlap (the recording proves them concurrent, and the diff sorts them); in the next the first task ends
before the second starts, nothing proves them concurrent, and the calls keep the order they ran in. The
same code then diffed as ``get_weather`` removed and added. A group proven on one side makes the matching
run of siblings on the other side a group too; a reorder nothing proves concurrent is still a change.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from stepfork.analysis import diff_traces
from stepfork.trace import record, trace_tool


@trace_tool
async def get_weather(city: str) -> str:
    await asyncio.sleep(0)  # lets a sibling task start: the two calls overlap under gather
    return f"The weather in {city} is sunny, 21 degrees (report wr_{uuid.uuid4().hex[:20]})."


@trace_tool
async def get_air_quality(city: str) -> str:
    await asyncio.sleep(0)
    return f"The air quality index in {city} is 42 (good)."


async def overlapping(city: str) -> list[str]:
    return list(await asyncio.gather(get_weather(city), get_air_quality(city)))


async def one_task_after_the_other(first: str, second: str, city: str = "Paris") -> list[str]:
    tools = {"get_weather": get_weather, "get_air_quality": get_air_quality}
    return [await asyncio.create_task(tools[name](city)) for name in (first, second)]


def recorded(tmp_path: Path, name: str, run: object) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("siblings", output=bundle) as session:
        outputs = asyncio.run(run)  # type: ignore[arg-type]
        session.set_output(sorted(o.split(" (report")[0] for o in outputs))
    return bundle


def test_siblings_proven_concurrent_in_one_recording_only_are_equivalent(tmp_path: Path) -> None:
    together = recorded(tmp_path, "together", overlapping("Paris"))
    apart = recorded(tmp_path, "apart", one_task_after_the_other("get_weather", "get_air_quality"))
    for baseline, candidate in ((together, apart), (apart, together)):
        result = diff_traces(baseline, candidate)
        assert result.equivalent, str(result)
        assert result.renamed == 1  # the fresh report id, paired across the two recordings


def test_a_changed_sibling_or_an_unproven_reorder_is_still_a_change(tmp_path: Path) -> None:
    together = recorded(tmp_path, "together", overlapping("Paris"))
    lyon = recorded(tmp_path, "lyon", one_task_after_the_other("get_weather", "get_air_quality", "Lyon"))
    assert "input.city" in {c.path for c in diff_traces(together, lyon).changes}
    twice = recorded(tmp_path, "twice", one_task_after_the_other("get_weather", "get_weather"))
    assert not diff_traces(together, twice).equivalent
    apart = recorded(tmp_path, "apart", one_task_after_the_other("get_weather", "get_air_quality"))
    swapped = recorded(tmp_path, "swapped", one_task_after_the_other("get_air_quality", "get_weather"))
    assert not diff_traces(apart, swapped).equivalent  # nothing proves them concurrent: the code's order
