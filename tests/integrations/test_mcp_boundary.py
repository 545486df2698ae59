"""MCP as a first-class boundary (issue 29, CASES C14): the requests of a real ``mcp.ClientSession`` to a
real MCP server (the example's ``MCPServer``) over stdio and streamable HTTP, recorded with one line
(``instrument_mcp``) and replayed through the Python API with the server never started."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_support import events_of, http_server, tool_calls, tools_agent
from mcp_types import CallToolResult, ListToolsResult
from weather_client import SERVER

from stepfork.integrations.mcp import instrument_mcp
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import record


@pytest.fixture
def pid_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stdio server's pid file: written when the SDK starts the server (weather_server.py)."""
    path = tmp_path / "server.pid"
    monkeypatch.setenv("WEATHER_PID_FILE", str(path))
    monkeypatch.delenv("WEATHER_MCP_URL", raising=False)
    return path


def record_agent(bundle: Path, city: str = "Paris") -> dict[str, Any]:
    with record("mcp-agent", output=bundle):
        return asyncio.run(tools_agent(city))


def replay_agent(bundle: Path, city: str = "Paris") -> dict[str, Any]:
    with ReplaySession.from_trace(bundle) as session:
        result = asyncio.run(tools_agent(city))
        session.verify_complete()
    return result


def test_each_request_is_a_tool_call_named_by_server_and_tool(bundle: Path, pid_file: Path) -> None:
    record_agent(bundle)
    assert tool_calls(bundle) == ["mcp/initialize", "weather/tools/list", "weather/get_forecast"]
    calls = {e["name"]: e for e in events_of(bundle) if e["type"] == "tool_call"}
    assert calls["weather/get_forecast"]["input"] == {"city": "Paris"}  # the arguments, nothing else
    assert calls["weather/tools/list"]["input"] == {}
    assert calls["mcp/initialize"]["input"]["clientInfo"] == {"name": "mcp", "version": "0.1.0"}
    results = {e["name"]: e for e in events_of(bundle) if e["type"] == "tool_result"}
    output = results["weather/get_forecast"]["output"]
    assert output["structuredContent"] == {"city": "Paris", "celsius": 21, "sky": "sunny", "rain_chance": 0.1}
    assert output["content"][0]["type"] == "text"
    listed = results["weather/tools/list"]["output"]["tools"]
    assert [t["name"] for t in listed] == ["get_forecast", "list_cities"]
    assert [e["type"] for e in events_of(bundle)].count("llm_request") == 0


def test_frozen_replay_never_starts_the_stdio_server_and_the_sdk_gets_its_own_types(
    bundle: Path, pid_file: Path
) -> None:
    recorded = record_agent(bundle)
    assert pid_file.exists()  # recording started the server
    pid_file.unlink()
    replayed = replay_agent(bundle)
    assert not pid_file.exists()  # the replay did not
    assert isinstance(replayed["result"], CallToolResult)
    assert isinstance(replayed["tools"], ListToolsResult)
    assert replayed["result"] == recorded["result"]
    assert replayed["tools"] == recorded["tools"]


def test_a_changed_tool_argument_diverges_at_its_path(bundle: Path, pid_file: Path) -> None:
    record_agent(bundle)
    pid_file.unlink()
    with ReplaySession.from_trace(bundle) as session, pytest.raises(ExceptionGroup) as raised:
        asyncio.run(tools_agent("Oslo"))  # raised through the session's task group
    assert raised.group_contains(ReplayMismatchError, depth=None)
    divergence = session.divergence
    assert isinstance(divergence, ReplayMismatchError)
    assert divergence.code == "input_diverged"
    assert divergence.diagnostic is not None
    assert divergence.diagnostic.difference.path == "$.city"
    assert "weather/get_forecast" in divergence.summary
    assert not pid_file.exists()


def test_an_is_error_result_is_a_recorded_failure_and_replays_as_the_sdk_returned_it(
    bundle: Path, pid_file: Path
) -> None:
    recorded = record_agent(bundle, "Atlantis")
    assert recorded["result"].is_error  # the SDK returns it; it does not raise
    results = [e for e in events_of(bundle) if e["type"] == "tool_result"]
    result = next(e for e in results if e["name"] == "weather/get_forecast")
    assert result["status"] == "error"
    assert result["output"]["message"] == "Error executing tool get_forecast: Unknown city: Atlantis"
    pid_file.unlink()
    replayed = replay_agent(bundle, "Atlantis")  # returned again, never raised; verify_complete passes
    assert replayed["result"] == recorded["result"]
    assert replayed["result"].is_error
    assert not pid_file.exists()


async def read_missing_resource() -> Any:
    from mcp import ClientSession
    from weather_client import connect

    async with connect() as (read, write), ClientSession(read, write) as session:
        instrument_mcp(session)
        await session.initialize()
        try:
            await session.read_resource("forecast://Atlantis")
        except MCPError as error:
            return error
    return None


def test_a_json_rpc_error_is_raised_again_as_the_sdks_own_error(bundle: Path, pid_file: Path) -> None:
    with record("mcp-agent", output=bundle):
        recorded = asyncio.run(read_missing_resource())
    assert isinstance(recorded, MCPError)
    pid_file.unlink()
    with ReplaySession.from_trace(bundle) as session:
        replayed = asyncio.run(read_missing_resource())
        session.verify_complete()
    assert isinstance(replayed, MCPError)  # the agent's `except MCPError` runs as it did
    assert (replayed.code, replayed.message) == (recorded.code, recorded.message)
    assert replayed.data == recorded.data
    assert not pid_file.exists()


def test_streamable_http_records_no_http_call_and_replays_without_a_request(
    tmp_path: Path, bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (the transport's own HTTP requests under `stepfork record --`, where every httpx client is captured:
    # test_mcp_cli.py)
    with http_server(tmp_path) as server:
        monkeypatch.setenv("WEATHER_MCP_URL", server.url)
        recorded = record_agent(bundle)
        assert server.requests() > 0
        assert tool_calls(bundle) == ["mcp/initialize", "weather/tools/list", "weather/get_forecast"]
        assert [e for e in events_of(bundle) if e["type"] == "llm_request"] == []  # no POST of its own
        before = server.requests()
        replayed = replay_agent(bundle)
        assert server.requests() == before  # the server saw nothing
        assert replayed["result"] == recorded["result"]
        with ReplaySession.from_trace(bundle) as session, pytest.raises(ExceptionGroup):
            asyncio.run(tools_agent("Oslo"))
        divergence = session.divergence
        assert divergence is not None
        assert divergence.diagnostic is not None
        assert divergence.diagnostic.difference.path == "$.city"
        assert server.requests() == before


def test_the_high_level_client_is_instrumented_before_it_connects(bundle: Path, pid_file: Path) -> None:
    async def agent() -> CallToolResult:
        args = [str(SERVER), "--pid-file", str(pid_file)]
        params = StdioServerParameters(command=sys.executable, args=args)
        async with instrument_mcp(Client(params)) as client:  # mode "auto": the 2026 discover probe
            return await client.call_tool("get_forecast", {"city": "Paris"})

    with record("mcp-client", output=bundle):
        recorded = asyncio.run(agent())
    # the SDK lists the tools to check the result against the tool's output schema: recorded too
    assert tool_calls(bundle) == ["mcp/server/discover", "weather/get_forecast", "weather/tools/list"]
    pid_file.unlink()
    with ReplaySession.from_trace(bundle) as session:
        replayed = asyncio.run(agent())
        session.verify_complete()
    assert replayed == recorded
    assert not pid_file.exists()


def test_instrument_mcp_refuses_what_is_not_a_session() -> None:
    with pytest.raises(TypeError, match="ClientSession"):
        instrument_mcp(object())


def test_the_module_imports_without_the_sdk_and_use_asks_for_the_extra() -> None:
    code = (
        "import sys\nsys.modules['mcp'] = None\nimport stepfork.integrations.mcp as m\n"
        "try:\n    m.instrument_mcp(object())\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == 'install "stepfork-trace[mcp]" to use the MCP integration'
