"""The MCP weather agent as a plain program, with no Stepfork import: recorded and replayed from the
command line (docs/integrations.md, "MCP").

    stepfork record -o weather.sftrace -- python mcp_script.py Paris
    stepfork replay weather.sftrace -- python mcp_script.py Paris

Prints the answer as JSON. Over streamable HTTP: start ``python weather_server.py --http --port-file
port.txt`` and set ``WEATHER_MCP_URL=http://127.0.0.1:$(cat port.txt)/mcp``.
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import ClientSession
from weather_client import ask, connect, make_llm


async def main(city: str) -> None:
    async with connect() as (read, write), ClientSession(read, write) as session:
        print(json.dumps(await ask(session, city, make_llm()), sort_keys=True))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "Paris"))
