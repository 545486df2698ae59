"""An MCP client session the agent did not instrument (NEWCOMER finding 2, CASES C14).

An agent that opens a ``ClientSession`` inside ``record()`` without ``instrument_mcp`` recorded no MCP call,
and its frozen replay started the stdio server and ran the tool live, MATCHED. Now every session made while
Stepfork records or replays (any mode but ``live``) is an instrumented boundary
(docs/decisions.md, "MCP sessions the agent did not instrument"): recorded, then served with the server
never started; a session the recording does not hold is refused by name, DIVERGED, and no server starts.
The real CLI in a subprocess, the example's real MCP server over stdio (its pid file says when it starts).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_support import tool_calls

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_agent"
STEPFORK = Path(sys.executable).parent / "stepfork"

AGENT = '''
"""A weather agent written as the MCP SDK's docs write a client, recorded with record(): no instrument_mcp."""
import asyncio
import os
import sys

from mcp import ClientSession
from weather_client import connect

from stepfork import record, trace_tool


@trace_tool
def pick_city(name: str) -> str:
    return name


async def forecast(city: str) -> dict:
    async with connect() as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("get_forecast", {"city": city})
        return result.structured_content


def run_agent() -> dict:
    city = pick_city("Paris")
    if os.environ.get("SKIP_MCP"):  # the earlier version of the agent, which asked no MCP server
        return {"city": city}
    return {"city": city, "forecast": asyncio.run(forecast(city))}


if __name__ == "__main__":
    with record("weather", output=sys.argv[1]) as session:
        session.set_output(run_agent())
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for source in EXAMPLE.glob("*.py"):
        shutil.copy2(source, tmp_path / source.name)
    (tmp_path / "plain_agent.py").write_text(AGENT)
    return tmp_path


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("WEATHER_") and k != "SKIP_MCP"}
    environment["WEATHER_PID_FILE"] = str(cwd / "server.pid")
    environment.update(env)
    return subprocess.run(args, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300)


def started(folder: Path) -> bool:
    """True when the stdio server was started since the last call (its pid file is consumed)."""
    pid = folder / "server.pid"
    found = pid.exists()
    pid.unlink(missing_ok=True)
    return found


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_session_used_inside_record_is_recorded_and_replays_with_the_server_never_started(
    folder: Path,
) -> None:
    recorded = run([sys.executable, "plain_agent.py", "run.sftrace"], folder)
    assert recorded.returncode == 0, recorded.stderr
    assert started(folder)
    calls = tool_calls(folder / "run.sftrace")  # the SDK lists the tools to check the result's schema
    assert calls == ["pick_city", "mcp/initialize", "weather/get_forecast", "weather/tools/list"]

    replayed = run([str(STEPFORK), "replay", "run.sftrace", "-e", "plain_agent:run_agent", "--json"], folder)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    report = json.loads(replayed.stdout)
    assert report["behavior"]["status"] == "MATCHED"
    assert [call["label"] for call in report["calls"]] == calls
    assert not started(folder)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_session_the_recording_does_not_hold_is_refused_by_name_and_no_server_starts(folder: Path) -> None:
    recorded = run([sys.executable, "plain_agent.py", "run.sftrace"], folder, SKIP_MCP="1")
    assert recorded.returncode == 0, recorded.stderr
    assert not started(folder)

    replayed = run([str(STEPFORK), "replay", "run.sftrace", "-e", "plain_agent:run_agent", "--json"], folder)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    report = json.loads(replayed.stdout)
    assert report["matching"]["status"] == "DIVERGED"
    assert "'mcp/initialize'" in report["matching"]["message"]
    assert not started(folder)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_live_replay_leaves_a_session_the_agent_did_not_instrument_as_it_was(folder: Path) -> None:
    """``live`` replays the agent against the real world: a session Stepfork would instrument on its own
    goes out untouched there, as before (one the user instrumented is matched, as ever)."""
    recorded = run([sys.executable, "plain_agent.py", "run.sftrace"], folder, SKIP_MCP="1")
    assert recorded.returncode == 0, recorded.stderr
    live = ["--mode", "live", "--allow-live-tool", "pick_city", "--json"]
    replayed = run([str(STEPFORK), "replay", "run.sftrace", "-e", "plain_agent:run_agent", *live], folder)
    report = json.loads(replayed.stdout)
    assert report["matching"]["status"] == "COMPLETE", report["matching"]
    assert started(folder)
