"""LangGraph's documented tool-error handling replays MATCHED (NEWCOMER3 finding 3; CASES C8).

``ToolNode(tools, handle_tool_errors=True)`` turns a tool's exception into the ``ToolMessage``
``Error: ValueError('...')\\n Please fix your mistakes.`` (``repr(e)``), which the next model request carries.
Replay raised the recorded failure as a RecordedDependencyError, so that request read
``Error: RecordedDependencyError("recorded tool failure ...")`` and unchanged code replayed DIVERGED, with no
way around it for ``stepfork replay BUNDLE -- python SCRIPT`` (``--raise-as`` needs ``--entrypoint``).
A failure of a builtin type is now raised as that builtin (tests/replay/test_replay_builtin_failures.py).
The real CLI, the real LangGraph and langchain-openai, an OpenAI-compatible server on 127.0.0.1
(helpers/local_openai.py), stopped before the replay.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from integration_helpers import events_of
from local_openai import serving

STEPFORK = Path(sys.executable).parent / "stepfork"

AGENT = '''
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import ToolNode, create_react_agent


def get_weather(city: str) -> str:
    """Get the current weather of a city."""
    raise ValueError(f"weather service has no data for {city}")


agent = create_react_agent(
    model=ChatOpenAI(model="gpt-4o-mini"),
    tools=ToolNode([get_weather], handle_tool_errors=True),
)
result = agent.invoke({"messages": [{"role": "user", "content": "What is the weather in Atlantis?"}]})
for message in result["messages"]:
    if message.type == "tool":
        print("TOOL:", message.content.splitlines()[0])
'''


def cli(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


def test_a_tool_error_fed_back_to_the_model_replays_matched_with_the_server_stopped(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    bundle = tmp_path / "errors.sftrace"
    with serving() as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-local"}
        recorded = cli(tmp_path, env, "record", "-o", str(bundle), "--", sys.executable, "agent.py")
        assert recorded.returncode == 0, recorded.stderr
        assert "TOOL: Error: ValueError('weather service has no data for Atlantis')" in recorded.stdout
        assert server.count("/chat/completions") == 2
    failed = [e for e in events_of(bundle) if e["type"] == "tool_result" and e.get("status") == "error"]
    assert [e["output"]["error_type"] for e in failed] == ["ValueError"]

    replayed = cli(tmp_path, env, "replay", str(bundle), "--", sys.executable, "agent.py")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "Status: COMPLETED" in replayed.stdout
    assert "TOOL: Error: ValueError('weather service has no data for Atlantis')" in replayed.stdout
