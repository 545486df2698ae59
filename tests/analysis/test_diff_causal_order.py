"""diff keeps an echo after the answer it echoes, inside a group of concurrent siblings (issue 30).

An agent framework may run its model call in a child task that the run's task awaits (the OpenAI Agents
SDK: ``asyncio.create_task(model.get_response(...))``), then send the next request, echoing the answer's
tool-call id, from the run's task. The recording's concurrency facts see two tasks alive together, so the
two calls are one ``auto`` group of siblings, which ``diff`` sorts by input to line up siblings that
finished in another order. Sorted, the echo came before the answer that pairs its id, and two recordings of
the same code differed at ``input.messages[1].tool_call_id``. The echo must stay after the answer.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from stepfork.analysis import diff_traces
from stepfork.trace import record
from stepfork.trace.instrument import allm_request


async def answer(question: str) -> dict[str, Any]:
    """A model's answer: a tool call with a fresh provider id, as every real model answer has."""
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "tool_call_id": f"call_{uuid.uuid4().hex[:24]}"}


async def run() -> str:
    async def ask() -> dict[str, Any]:
        return await allm_request(  # type: ignore[no-any-return]
            model="gpt-4o-mini", input={"question": "Weather?"}, call=lambda: answer("Weather?")
        )

    first = await asyncio.create_task(ask())  # the model call runs in a child task
    echo = {"messages": [{"role": "user"}, {"role": "tool", "tool_call_id": first["tool_call_id"]}]}
    second = await allm_request(model="gpt-4o-mini", input=echo, call=lambda: answer("again"))
    return str(second["id"])[:9]


def recorded(tmp_path: Path, name: str) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("child-task", output=bundle) as session:
        session.set_output(asyncio.run(run()))
    return bundle


def test_two_recordings_of_a_model_call_in_a_child_task_are_equivalent(tmp_path: Path) -> None:
    result = diff_traces(recorded(tmp_path, "one"), recorded(tmp_path, "two"))
    assert result.equivalent, str(result)
    assert [s.baseline.step for s in result.steps if s.baseline is not None] == [1, 3, 5]
    assert result.renamed == 4  # the answers' ids and the tool-call id, paired once and echoed
