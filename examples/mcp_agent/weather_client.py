"""The MCP weather agent's own code, written as the MCP SDK's docs write a client (no Stepfork import).

:func:`connect` opens the connection to ``weather_server.py``: over stdio (the SDK starts the server as a
subprocess; ``WEATHER_PID_FILE`` is handed to it as ``--pid-file``) or, when ``WEATHER_MCP_URL`` is set,
over streamable HTTP to a server already running there. :func:`ask` is one conversation: the handshake,
the server's tool list offered to the model (the real OpenAI SDK against ``fake_llm.py``), the tool call
the model asks for, then the city's forecast resource and the ``daily_brief`` prompt.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import openai
from fake_llm import FakeLLM
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

MODEL = "gpt-4o-mini"
SERVER = Path(__file__).with_name("weather_server.py")


@asynccontextmanager
async def connect() -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams of a connection to the weather server (module docstring)."""
    url = os.environ.get("WEATHER_MCP_URL")
    if url:
        async with streamable_http_client(url) as (read, write):
            yield read, write
        return
    args = [str(SERVER)]
    if os.environ.get("WEATHER_PID_FILE"):
        args += ["--pid-file", os.environ["WEATHER_PID_FILE"]]
    env = {"WEATHER_UNITS": os.environ["WEATHER_UNITS"]} if os.environ.get("WEATHER_UNITS") else None
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with stdio_client(params) as (read, write):
        yield read, write


def make_llm() -> openai.AsyncOpenAI:
    """An OpenAI client talking to the local fake API."""
    http = httpx2.AsyncClient(transport=FakeLLM().transport())
    return openai.AsyncOpenAI(api_key="sk-local-example", http_client=http, max_retries=0)


async def ask(session: ClientSession, city: str, llm: openai.AsyncOpenAI) -> dict[str, Any]:
    """Ask whether to take an umbrella in ``city``; return the answer and what the server said."""
    await session.initialize()
    listed = await session.list_tools()
    tools: list[Any] = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
        }
        for t in listed.tools
    ]
    messages: list[Any] = [
        {"role": "system", "content": "You are a concise weather assistant."},
        {"role": "user", "content": f"Should I take an umbrella in {city} today?"},
    ]
    first = await llm.chat.completions.create(model=MODEL, messages=messages, tools=tools, temperature=0)
    call = (first.choices[0].message.tool_calls or [])[0]
    result = await session.call_tool(call.function.name, json.loads(call.function.arguments))
    text = "\n".join(part.text for part in result.content if part.type == "text")
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": text},
    ]
    final = await llm.chat.completions.create(model=MODEL, messages=messages, temperature=0)
    answer: dict[str, Any] = {
        "answer": final.choices[0].message.content,
        "forecast": result.structured_content,
        "tool_failed": result.is_error,
    }
    if not result.is_error:
        resource = await session.read_resource(f"forecast://{city}")
        prompt = await session.get_prompt("daily_brief", {"city": city})
        answer["line"] = resource.contents[0].text
        answer["brief_prompt"] = prompt.messages[0].content.text
    return answer
