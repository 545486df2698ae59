"""A tool-using pydantic-ai agent traced by its OpenInference instrumentor imports and replays (issue 15).

pydantic-ai's spans (GenAI attributes) pass through ``openinference-instrumentation-pydantic-ai``'s span
processor and the OTel file exporter; ``stepfork import`` reads the request from the GenAI attributes
(OpenInference's ``input.value`` there is the user prompt), the tools are matched by name and arguments.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from .conftest import FAKE, HERE, run, stepfork_exe

pytestmark = pytest.mark.slow
AGENT = HERE / "agent" / "pydantic_ai_otel.py"


def test_pydantic_ai_agent_imports_and_replays(tmp_path: Path) -> None:
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
    code, text = cli("replay", "prod.sftrace", "--entrypoint", "pydantic_ai_otel:run_agent")
    assert code == 0, text
    assert "2. tool get_weather (substituted)" in text
    assert "1. llm openai/gpt-4o-mini (substituted, matched on partial input)" in text
    assert "Recorded behavior: MATCHED" in text

    # the tool description the model sees is held (gen_ai.tool.definitions): a change diverges there
    code, text = cli(
        "replay",
        "prod.sftrace",
        "--entrypoint",
        "pydantic_ai_otel:run_agent",
        env={"WEATHER_TOOL_DOC": "Weather."},
    )
    assert code == 1, text
    assert "input diverged from the recording at $.body.tools[0].description" in text
