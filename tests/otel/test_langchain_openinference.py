"""A tool-using LangChain agent traced by its OpenInference instrumentor imports and replays (issue 15).

LangGraph's prebuilt ReAct agent on ``ChatOpenAI`` (the real openai SDK on a fake transport) runs once in
production under ``openinference-instrumentation-langchain`` (spans written by the OTel file exporter).
Its LLM spans hold LangChain's run inputs in ``input.value``; the import reads the request from
the flattened ``llm.*`` attributes (a partial call) and each tool's arguments from the model's tool call
its ``ToolMessage`` names. A replay of the same agent code matches the tools by name and arguments.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from stepfork.analysis.otlp import import_otlp
from stepfork.replay import replay_entrypoint
from stepfork.trace.bundle import read_extension

from .conftest import FAKE, HERE, run

pytestmark = pytest.mark.slow
AGENT = HERE / "agent" / "langchain_otel.py"


def test_langchain_agent_imports_and_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy2(AGENT, tmp_path / AGENT.name)
    shutil.copy2(FAKE, tmp_path / FAKE.name)
    produced = run([sys.executable, AGENT.name, "produce", "spans.jsonl"], tmp_path)
    assert produced.code == 0, produced.text

    # in process (the CLI's import and replay paths are covered by the other agents' tests)
    [imported] = import_otlp(tmp_path / "spans.jsonl")
    assert imported.partial() == 2
    bundle = imported.save(tmp_path / "prod.sftrace")
    # the pool may have run either tool first in production
    tools = sorted(e.input["city"] for e in imported.events if e.type == "tool_call")
    assert tools == ["Lyon", "Paris"]
    results = sorted(e.output for e in imported.events if e.type == "tool_result")
    assert results == ["Lyon: 18C, sunny", "Paris: 21C, sunny"]
    # LangGraph's ToolNode ran the turn's two tool calls as tasks of a thread pool: their `tools` task
    # spans overlap (the short tool spans may not), so the facts give them lanes of their own and replay
    # matches them in whichever order the pool makes them
    facts = read_extension(bundle, "concurrency")
    lanes = [entry["lane"] for entry in facts["calls"].values()]
    assert len(lanes) == 4
    assert lanes[0] == lanes[3] == facts["root_lane"]
    assert len({lanes[0], lanes[1], lanes[2]}) == 3

    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        agent = importlib.import_module("langchain_otel")
        outcome = replay_entrypoint(bundle, agent.run_agent)
        assert outcome.exit_code == 0, outcome
        assert outcome.behavior.status == "MATCHED"
        assert sorted((c.kind, c.label, c.action, c.match) for c in outcome.calls) == [
            ("llm", "openai/gpt-4o-mini", "substituted", "partial"),
            ("llm", "openai/gpt-4o-mini", "substituted", "partial"),
            ("tool", "get_weather", "substituted", "full"),
            ("tool", "get_weather", "substituted", "full"),
        ]
        # a changed system prompt diverges at its path in the held messages
        monkeypatch.setenv("WEATHER_SYSTEM", "You are terse.")
        importlib.reload(agent)
        changed = replay_entrypoint(bundle, agent.run_agent)
    finally:
        sys.modules.pop("langchain_otel", None)
        sys.modules.pop("fake_providers", None)
    assert changed.exit_code == 1
    assert changed.matching.status == "DIVERGED"
    assert "$.body.messages[0].content" in (changed.matching.message or "")
