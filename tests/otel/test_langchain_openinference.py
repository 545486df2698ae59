"""A tool-using LangChain agent traced by its OpenInference instrumentor imports and replays (issue 15).

LangGraph's prebuilt ReAct agent on ``ChatOpenAI`` (the real openai SDK on a fake transport) runs once in
production under ``openinference-instrumentation-langchain`` (spans written by the OTel file exporter).
Its LLM spans hold LangChain's run inputs in ``input.value``; ``stepfork import`` reads the request from
the flattened ``llm.*`` attributes (a partial call) and each tool's arguments from the model's tool call
its ``ToolMessage`` names. ``stepfork replay`` of the same agent code matches the tools by name and
arguments.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from stepfork.replay import replay_entrypoint
from stepfork.trace.bundle import read_extension

from .conftest import FAKE, HERE, run, stepfork_exe

pytestmark = pytest.mark.slow
AGENT = HERE / "agent" / "langchain_otel.py"


def test_langchain_agent_imports_and_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy2(AGENT, tmp_path / AGENT.name)
    shutil.copy2(FAKE, tmp_path / FAKE.name)
    produced = run([sys.executable, AGENT.name, "produce", "spans.jsonl"], tmp_path)
    assert produced.code == 0, produced.text

    def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
        done = run([stepfork_exe(), *args], tmp_path, env)
        return done.code, done.text

    code, text = cli("import", "spans.jsonl", "-o", "prod.sftrace")
    assert code == 0, text
    assert "2 LLM calls, 2 tool calls" in text
    # LangGraph's ToolNode ran the turn's two tool calls as tasks of a thread pool: their `tools` task
    # spans overlap (the short tool spans may not), so the facts give them lanes of their own and replay
    # matches them in whichever order the pool makes them
    facts = read_extension(tmp_path / "prod.sftrace", "concurrency")
    lanes = [entry["lane"] for entry in facts["calls"].values()]
    assert len(lanes) == 4
    assert lanes[0] == lanes[3] == facts["root_lane"]
    assert len({lanes[0], lanes[1], lanes[2]}) == 3
    code, text = cli("replay", "prod.sftrace", "--entrypoint", "langchain_otel:run_agent")
    assert code == 0, text
    assert "1. llm openai/gpt-4o-mini (substituted, matched on partial input)" in text
    assert "2. tool get_weather (substituted)" in text
    assert "3. tool get_weather (substituted)" in text
    assert "Recorded behavior: MATCHED" in text

    # a changed system prompt diverges at its path in the held messages (in process: the CLI path is above)
    monkeypatch.setenv("WEATHER_SYSTEM", "You are terse.")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        agent = importlib.import_module("langchain_otel")
        changed = replay_entrypoint(tmp_path / "prod.sftrace", agent.run_agent)
    finally:
        sys.modules.pop("langchain_otel", None)
        sys.modules.pop("fake_providers", None)
    assert changed.exit_code == 1
    assert changed.matching.status == "DIVERGED"
    assert "$.body.messages[0].content" in (changed.matching.message or "")
