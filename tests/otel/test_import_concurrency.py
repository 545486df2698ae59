"""Concurrency facts of an imported trace, read from its span times (issue 15; docs/import.md).

An async agent whose tools are traced with the OTel SDK tracer the way a user instruments them (an
OpenInference TOOL span around each tool body) runs its tool calls with ``asyncio.gather`` in production.
The imported bundle holds ``concurrency.json`` (listed in integrity.json) placing the overlapping tool
calls in lanes of their own, so the default ``auto`` ordering replays the agent MATCHED when its live calls
arrive in another order than the spans'. The same agent making the calls one after the other stays
strict: a changed order diverges. A framework that wraps each call in a task span (LangGraph's thread pool)
makes its calls concurrent when the task spans overlap. In process: the point is the facts and the
ordering, not the CLI.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from stepfork.analysis.otlp import import_otlp
from stepfork.replay import replay_entrypoint
from stepfork.trace import trace_tool
from stepfork.trace.bundle import read_extension
from stepfork.trace.concurrency import load_facts

CITIES = ["Paris", "Lyon", "Nice"]
TRACER: list[Any] = [otel_trace.get_tracer("unused")]
# how many times each task yields before calling its tool: the scheduling the live run happens to get
# (production: none; a replay may see another order, as a real event loop under other latencies would)
YIELDS: dict[str, int] = {}
CHAIN = {"openinference.span.kind": "CHAIN"}


@trace_tool
async def get_weather(city: str) -> dict[str, Any]:
    attrs = {
        "openinference.span.kind": "TOOL",
        "tool.name": "get_weather",
        "input.value": json.dumps({"city": city}),
        "input.mime_type": "application/json",
    }
    with TRACER[0].start_as_current_span("get_weather", attributes=attrs) as span:
        await asyncio.sleep(0)  # the weather service's I/O: the other tasks run meanwhile
        result = {"city": city, "celsius": len(city) * 3}
        span.set_attribute("output.value", json.dumps(result))
        span.set_attribute("output.mime_type", "application/json")
        return result


async def _one(city: str) -> dict[str, Any]:
    for _ in range(YIELDS.get(city, 0)):
        await asyncio.sleep(0)
    return await get_weather(city)


def _agent_span(question: str) -> Any:
    attrs = {"openinference.span.kind": "AGENT", "input.value": question, "input.mime_type": "text/plain"}
    return TRACER[0].start_as_current_span("weather-agent", attributes=attrs)


async def gather_agent(question: str = "Weather?") -> str:
    with _agent_span(question) as span:
        found = await asyncio.gather(*(_one(city) for city in CITIES))
        answer = ", ".join(f"{r['city']} {r['celsius']}" for r in found)
        span.set_attribute("output.value", answer)
        return answer


async def sequential_agent(question: str = "Weather?") -> str:
    with _agent_span(question) as span:
        found = [await _one(city) for city in sorted(CITIES, key=lambda c: YIELDS.get(c, 0))]
        answer = ", ".join(f"{r['city']} {r['celsius']}" for r in sorted(found, key=lambda r: r["city"]))
        span.set_attribute("output.value", answer)
        return answer


def _produce(agent: Callable[..., Any], sdk_spans: Callable[..., Path], tmp_path: Path) -> Path:
    def build(tracer: Any) -> None:
        TRACER[0] = tracer
        token = otel_context.attach(otel_context.Context())
        try:
            asyncio.run(agent("Weather?"))
        finally:
            otel_context.detach(token)

    spans = sdk_spans(build, "spans.jsonl")
    [imported] = import_otlp(spans)
    return imported.save(tmp_path / "prod.sftrace")


def _replay(bundle: Path, agent: Callable[..., Any], yields: dict[str, int]) -> Any:
    YIELDS.clear()
    YIELDS.update(yields)
    try:
        return replay_entrypoint(bundle, agent)
    finally:
        YIELDS.clear()


def test_gathered_tool_spans_overlap_and_replay_matched_in_another_order(
    sdk_spans: Callable[..., Path], tmp_path: Path
) -> None:
    bundle = _produce(gather_agent, sdk_spans, tmp_path)
    integrity = json.loads((bundle / "integrity.json").read_text())
    assert "concurrency.json" in json.dumps(integrity)
    facts = read_extension(bundle, "concurrency")
    calls = list(facts["calls"].values())
    assert len(calls) == 3
    assert len({c["lane"] for c in calls}) == 3
    assert facts["root_lane"] not in {c["lane"] for c in calls}
    starts = sorted(c["start_us"] for c in calls)
    assert all(start < max(c["end_us"] for c in calls) for start in starts)  # the spans overlap
    assert all(len(c["alive_tasks"]) == 2 for c in calls)
    assert load_facts(bundle) is not None

    # the live run calls the tools in the reverse order: matched by name and arguments within the group
    outcome = _replay(bundle, gather_agent, {"Paris": 4, "Lyon": 2})
    assert outcome.exit_code == 0, outcome.to_text() if hasattr(outcome, "to_text") else outcome
    assert outcome.matching.status == "COMPLETE"
    assert outcome.behavior.status == "MATCHED"
    # strict ordering on the same bundle refuses the reordered calls: the facts are what relaxed it
    YIELDS.update({"Paris": 4, "Lyon": 2})
    try:
        strict = replay_entrypoint(bundle, gather_agent, ordering="strict")
    finally:
        YIELDS.clear()
    assert strict.exit_code == 1


def test_sequential_tool_spans_share_the_run_lane_and_stay_strict(
    sdk_spans: Callable[..., Path], tmp_path: Path
) -> None:
    bundle = _produce(sequential_agent, sdk_spans, tmp_path)
    facts = read_extension(bundle, "concurrency")
    calls = sorted(facts["calls"].values(), key=lambda c: c["start_us"])
    assert [c["lane"] for c in calls] == [facts["root_lane"]] * 3
    assert all(a["end_us"] <= b["start_us"] for a, b in itertools.pairwise(calls))
    assert _replay(bundle, sequential_agent, {}).exit_code == 0
    # the same calls in another order: the default ordering keeps the recorded order and diverges
    reordered = _replay(bundle, sequential_agent, {"Paris": 2, "Lyon": 1})
    assert reordered.exit_code == 1
    assert reordered.matching.status != "COMPLETE"


def _tool_span(tracer: Any, city: str, task: Any) -> Any:
    attrs = {
        "openinference.span.kind": "TOOL",
        "tool.name": "get_weather",
        "input.value": json.dumps({"city": city}),
        "input.mime_type": "application/json",
        "output.value": "{}",
        "output.mime_type": "application/json",
    }
    return tracer.start_span("get_weather", attributes=attrs, context=otel_trace.set_span_in_context(task))


def test_task_spans_that_overlap_make_their_tool_calls_concurrent(sdk_spans: Callable[..., Path]) -> None:
    """A framework that wraps each call in a task span (LangGraph's ``tools`` tasks in a thread pool):
    the task spans overlap while the short tool spans do not; per-step task spans one after the other
    stay sequential."""

    def build(tracer: Any) -> None:
        agent_attrs = {"openinference.span.kind": "AGENT", "input.value": "Weather?"}
        with tracer.start_as_current_span("agent", attributes=agent_attrs) as agent:
            root = otel_trace.set_span_in_context(agent)
            # two pool tasks started together; their tools run one after the other
            first = tracer.start_span("tools", context=root, attributes=CHAIN)
            second = tracer.start_span("tools", context=root, attributes=CHAIN)
            for task, city in ((first, "Paris"), (second, "Lyon")):
                _tool_span(tracer, city, task).end()
            first.end()
            second.end()
            # then two steps, each in its own task span, one after the other
            for city in ("Nice", "Lille"):
                step = tracer.start_span("tools", context=root, attributes=CHAIN)
                _tool_span(tracer, city, step).end()
                step.end()

    [imported] = import_otlp(sdk_spans(build, "spans.json"))
    facts = imported.concurrency
    cities = {e.id: e.input["city"] for e in imported.events if e.type == "tool_call"}
    lane = {cities[event_id]: entry["lane"] for event_id, entry in facts["calls"].items()}
    assert lane["Paris"] != lane["Lyon"]
    assert facts["root_lane"] not in (lane["Paris"], lane["Lyon"])
    assert lane["Nice"] == lane["Lille"] == facts["root_lane"]


def test_tasks_of_one_langgraph_superstep_are_concurrent_even_when_their_spans_do_not_overlap() -> None:
    # LangGraph ran a model turn's two tool calls as two tasks of superstep 2 (distinct langgraph_path); in
    # production the pool happened to run them one after the other, which says nothing about the replay
    from stepfork.analysis.otlp.concurrency import CallSpan, span_facts, superstep_task

    def task(step: int, index: int) -> tuple[int, str] | None:
        metadata = {"langgraph_step": step, "langgraph_path": ["__pregel_push", index]}
        return superstep_task({"metadata": json.dumps(metadata)})

    root = ("root", 0, 100, None)
    calls = [
        CallSpan("a", "run", 10, 20, (root, ("t1", 9, 21, task(2, 0)), ("a", 10, 20, None))),
        CallSpan("b", "run", 30, 40, (root, ("t2", 29, 41, task(2, 1)), ("b", 30, 40, None))),
        # two calls inside one task (the same langgraph_path) keep their order
        CallSpan("c", "run", 50, 55, (root, ("t3", 49, 70, task(3, 0)), ("c", 50, 55, None))),
        CallSpan("d", "run", 60, 65, (root, ("t3", 49, 70, task(3, 0)), ("d", 60, 65, None))),
    ]
    facts = span_facts("run", 0, calls)["calls"]
    assert facts["a"]["lane"] != facts["b"]["lane"]
    assert facts["a"]["alive_tasks"]
    assert facts["b"]["alive_tasks"]
    assert facts["c"]["lane"] == facts["d"]["lane"] == 0
    assert superstep_task({"metadata": "not json"}) is None
    assert superstep_task({"metadata": json.dumps({"langgraph_step": 1})}) is None
