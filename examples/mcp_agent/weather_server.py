"""The MCP server of the MCP example: a real ``MCPServer`` (the ``mcp`` SDK's FastMCP) named ``weather``.

Tools ``get_forecast(city)`` (structured output; an unknown city is a tool error, an ``isError`` result)
and ``list_cities()``; a resource ``forecast://{city}``; a prompt ``daily_brief(city)``. Run by the agent
over stdio (``python weather_server.py``, the SDK starts it as a subprocess) or over streamable HTTP
(``python weather_server.py --http --port-file F``: binds a free port on 127.0.0.1 and writes it to F).

``--pid-file F`` writes the process id to F at start (the tests read it to prove a frozen replay never
starts the server); ``--count-file F`` (HTTP) writes the number of HTTP requests served so far to F after
each one. ``WEATHER_UNITS=1`` in the environment adds a ``units`` parameter to ``get_forecast``: a changed
tool list, as a new server release would advertise it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

FORECASTS = {
    "Paris": {"celsius": 21, "sky": "sunny", "rain_chance": 0.1},
    "Oslo": {"celsius": 4, "sky": "rain", "rain_chance": 0.9},
}

mcp = MCPServer("weather", instructions="Forecasts for a few cities.")

if os.environ.get("WEATHER_UNITS"):

    @mcp.tool()
    def get_forecast(city: str, units: str = "celsius") -> dict[str, Any]:
        """Today's forecast for a city."""
        return _forecast(city)

else:

    @mcp.tool()
    def get_forecast(city: str) -> dict[str, Any]:
        """Today's forecast for a city."""
        return _forecast(city)


def _forecast(city: str) -> dict[str, Any]:
    if city not in FORECASTS:
        raise ToolError(f"Unknown city: {city}")
    return {"city": city, **FORECASTS[city]}


@mcp.tool()
def list_cities() -> list[str]:
    """The cities with a forecast."""
    return sorted(FORECASTS)


@mcp.resource("forecast://{city}")
def forecast_text(city: str) -> str:
    """The forecast of a city as one line of text."""
    data = _forecast(city)
    return f"{city}: {data['celsius']} C, {data['sky']}"


@mcp.prompt()
def daily_brief(city: str) -> str:
    """A prompt asking for a short brief about a city's weather."""
    return f"Write a two-line weather brief for {city}."


def _write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole (write, then rename): a reader never sees it half written."""
    partial = f"{path}.partial"
    with open(partial, "w") as handle:
        handle.write(text)
    os.replace(partial, path)


def _serve_http(port_file: str, count_file: str | None) -> None:
    import anyio
    import uvicorn

    app = mcp.streamable_http_app()
    served = 0

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        nonlocal served
        if scope["type"] == "http":
            served += 1
            if count_file:
                _write(count_file, str(served))
        await app(scope, receive, send)

    config = uvicorn.Config(counted, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            while not server.started:
                await anyio.sleep(0.01)
            _write(port_file, str(server.servers[0].sockets[0].getsockname()[1]))

    anyio.run(main)


def main(argv: list[str]) -> None:
    """Serve over stdio, or over streamable HTTP with ``--http --port-file F`` (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pid-file")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port-file")
    parser.add_argument("--count-file")
    args = parser.parse_args(argv)
    if args.pid_file:
        _write(args.pid_file, str(os.getpid()))
    if args.http:
        _serve_http(args.port_file, args.count_file)
    else:
        mcp.run(transport="stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
