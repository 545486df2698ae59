"""The MCP weather agent with Stepfork in one line: ``instrument_mcp(session)`` (docs/integrations.md, "MCP").

Every request of the session is a tool call of the recording (``mcp/initialize``, ``weather/tools/list``,
``weather/get_forecast``, ``weather/resources/read``, ``weather/prompts/get``); ``instrument_openai``
records the model's requests. In a frozen replay the server is never started: the session is served from
the bundle.

    python mcp_agent.py record weather.sftrace  # add --overwrite to replace an existing bundle
    stepfork replay weather.sftrace --entrypoint mcp_agent:run_agent
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcp import ClientSession
from weather_client import ask, connect, make_llm

from stepfork.integrations.mcp import instrument_mcp
from stepfork.integrations.openai import instrument_openai
from stepfork.trace import record, record_main

CITY = "Paris"


async def run_agent(city: str = CITY) -> dict[str, Any]:
    """Answer the umbrella question for ``city`` with the weather MCP server's tools."""
    async with connect() as (read, write), ClientSession(read, write) as session:
        instrument_mcp(session)
        return await ask(session, city, instrument_openai(make_llm()))


def record_run(bundle: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the agent under ``stepfork.record`` into ``bundle``; return its result."""
    with record("mcp-weather-agent", output=bundle, overwrite=overwrite, run_input=CITY) as session:
        result = asyncio.run(run_agent())
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record BUNDLE.sftrace [--overwrite]``: record, print the result as JSON (exit 2: bad input)."""
    return record_main(argv, {"record": record_run})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
