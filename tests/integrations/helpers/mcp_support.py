"""Shared pieces of the MCP tests (issue 29): a tools-only agent on the example's real MCP server, and that
server started over streamable HTTP on 127.0.0.1 with a request counter."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession
from weather_client import SERVER, connect

from stepfork.integrations.mcp import instrument_mcp


async def tools_agent(city: str, *, instrument: bool = True) -> dict[str, Any]:
    """A tools-only MCP agent as the SDK's docs write one: handshake, list the tools, call one."""
    async with connect() as (read, write), ClientSession(read, write) as session:
        if instrument:
            instrument_mcp(session)
        await session.initialize()
        listed = await session.list_tools()
        result = await session.call_tool("get_forecast", {"city": city})
        return {"tools": listed, "result": result}


def events_of(bundle: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]


def tool_calls(bundle: Path) -> list[str]:
    """The names of the bundle's tool calls, in order."""
    return [e["name"] for e in events_of(bundle) if e["type"] == "tool_call"]


@dataclass
class HttpServer:
    """The example's server over streamable HTTP: ``url``, ``pid_file``, and ``requests()`` served so far."""

    url: str
    pid_file: Path
    count_file: Path

    def requests(self) -> int:
        return int(self.count_file.read_text()) if self.count_file.exists() else 0


@contextmanager
def http_server(folder: Path, *, units: bool = False) -> Iterator[HttpServer]:
    """Start ``weather_server.py --http`` on a free port of 127.0.0.1; stop it at the end."""
    port_file, pid_file, count_file = folder / "port.txt", folder / "server.pid", folder / "count.txt"
    env = {name: value for name, value in os.environ.items() if name != "WEATHER_UNITS"}
    if units:
        env["WEATHER_UNITS"] = "1"
    args = [sys.executable, str(SERVER), "--http", "--port-file", str(port_file)]
    args += ["--pid-file", str(pid_file), "--count-file", str(count_file)]
    process = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():  # the server writes its port once it listens
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the MCP test server did not start")
            time.sleep(0.02)
        yield HttpServer(f"http://127.0.0.1:{port_file.read_text()}/mcp", pid_file, count_file)
    finally:
        process.terminate()
        process.wait(timeout=30)
