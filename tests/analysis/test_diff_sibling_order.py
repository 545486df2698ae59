"""diff and the order a framework gives concurrent siblings' results by their random ids (lead's finding on
smolagents; docs/diff.md "Concurrent siblings").

smolagents' ``ToolCallingAgent`` runs a model's parallel tool calls in a thread pool and lists them, and
their observations, sorted by the provider's tool-call ids. The ids are random, so two recordings of the
same code list ``get_weather`` and ``get_air_quality`` in either order. The agent below does what
smolagents does; its two recordings are made with ids that sort one way and then the other. The order is
noise (``sibling order``); a reorder of anything else, or a sibling's changed text, is still a change.
"""

from __future__ import annotations

import contextvars
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from stepfork.analysis import diff_traces
from stepfork.trace import record, trace_tool
from stepfork.trace.instrument import llm_request


@trace_tool
def get_weather(city: str) -> str:
    return f"The weather in {city} is sunny, 21 degrees (report wr_{uuid.uuid4().hex[:20]})."


@trace_tool
def get_air_quality(city: str) -> str:
    return f"The air quality index in {city} is 42 (good)."


TOOLS = {"get_weather": get_weather, "get_air_quality": get_air_quality}


def model(weather_first: bool, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A model answer with two parallel tool calls whose fresh ids sort ``get_weather`` first or last."""
    if len(messages) > 2:
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "content": "Sunny, good air."}
    low, high = f"call_A{uuid.uuid4().hex[:23]}", f"call_Z{uuid.uuid4().hex[:23]}"
    ids = (low, high) if weather_first else (high, low)
    calls = [{"id": i, "name": n, "arguments": {"city": "Paris"}} for i, n in zip(ids, TOOLS, strict=True)]
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "tool_calls": calls}


def agent(weather_first: bool, *, instructions: str, observation: str = "{}") -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": instructions},
        {"role": "user", "content": "Weather and air in Paris?"},
    ]
    answer = llm_request(model="m", input={"messages": messages}, call=lambda: model(weather_first, messages))
    calls = {call["id"]: call for call in answer["tool_calls"]}
    with ThreadPoolExecutor(2) as pool:  # as smolagents: copy_context, one thread per call
        futures = {
            k: pool.submit(contextvars.copy_context().run, TOOLS[c["name"]], **c["arguments"])
            for k, c in calls.items()
        }
    outputs = {k: f.result() for k, f in futures.items()}
    listed = [calls[k] for k in sorted(calls)]  # sorted by the provider's ids, as smolagents sorts them
    observations = "\n".join(observation.format(outputs[k]) for k in sorted(outputs))
    messages.append({"role": "assistant", "content": f"Calling tools:\n{listed}"})
    messages.append({"role": "user", "content": f"Observation:\n{observations}"})
    final = llm_request(model="m", input={"messages": messages}, call=lambda: model(weather_first, messages))
    return f"{final['content']} ({observations})"


INSTRUCTIONS = "Use the tools.\nAnswer in one line."


def recorded(tmp_path: Path, name: str, weather_first: bool, **changes: str) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("siblings", output=bundle) as session:
        session.set_output(agent(weather_first, **{"instructions": INSTRUCTIONS, **changes}))
    return bundle


def test_results_listed_in_the_order_of_random_ids_are_equivalent(tmp_path: Path) -> None:
    first, last = recorded(tmp_path, "first", True), recorded(tmp_path, "last", False)
    result = diff_traces(first, last)
    assert result.equivalent, str(result)
    reordered = {c.path for s in result.steps for c in s.ignored if c.noise == "sibling order"}
    assert reordered == {"input.messages[2].content", "input.messages[3].content", "output"}
    same = diff_traces(first, recorded(tmp_path, "same", True))
    assert same.equivalent
    assert not [c for s in same.steps for c in s.ignored if c.noise == "sibling order"]


def test_a_reorder_of_anything_else_or_a_changed_sibling_text_is_still_a_change(tmp_path: Path) -> None:
    first = recorded(tmp_path, "first", True)
    swapped = recorded(tmp_path, "swapped", False, instructions="Answer in one line.\nUse the tools.")
    assert [c.path for c in diff_traces(first, swapped).changes][:1] == ["input.messages[0].content"]
    shortened = recorded(tmp_path, "short", False, observation="- {}")
    changed = [c.path for c in diff_traces(first, shortened).changes]
    assert "input.messages[3].content" in changed
    assert diff_traces(first, recorded(tmp_path, "last", False), strict=True).changes  # it did differ
