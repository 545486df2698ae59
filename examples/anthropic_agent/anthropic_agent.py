"""A weather agent on the real Anthropic SDK, recorded and replayed by Stepfork (docs/integrations.md).

The client is an ordinary ``anthropic.Anthropic`` whose HTTP transport is the local fake Messages API of
``fake_anthropic.py`` (a ``tool_use`` turn, a final turn, a streamed answer); no network, no key. One line
instruments it: ``instrument_anthropic(client)``.

    python anthropic_agent.py record weather.sftrace  # add --overwrite to replace an existing bundle
    stepfork replay weather.sftrace --entrypoint anthropic_agent:run_agent
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anthropic
import httpx2
from fake_anthropic import FakeAnthropic

from stepfork.integrations.anthropic import instrument_anthropic
from stepfork.trace import record, record_main, trace_tool

MODEL = "claude-sonnet-5-5"
SYSTEM = "You are a concise weather assistant."
QUESTION = "Should I take an umbrella in Paris today?"
TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather of a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


@trace_tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather service (a tool: recorded, served from the bundle on replay)."""
    return {"city": city, "celsius": 21, "sky": "sunny"}


def make_client() -> anthropic.Anthropic:
    """An instrumented Anthropic client talking to the local fake API."""
    http = httpx2.Client(transport=FakeAnthropic().transport())
    return instrument_anthropic(anthropic.Anthropic(api_key="sk-ant-local", http_client=http, max_retries=0))


def run_agent(question: str = QUESTION) -> dict[str, Any]:
    """Answer ``question`` with one tool round trip; return ``{"answer", "streamed", "tool_calls"}``."""
    client = make_client()
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    tool_calls = 0
    while True:
        reply = client.messages.create(
            model=MODEL, max_tokens=512, system=SYSTEM, tools=TOOLS, messages=messages
        )
        messages.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            break
        results = []
        for use in uses:
            tool_calls += 1
            output = get_weather(**use.input)
            results.append(
                {"type": "tool_result", "tool_use_id": use.id, "content": json.dumps(output, sort_keys=True)}
            )
        messages.append({"role": "user", "content": results})
    answer = "".join(block.text for block in reply.content if block.type == "text")
    stream = client.messages.create(
        model=MODEL, max_tokens=128, messages=[{"role": "user", "content": "Say it again."}], stream=True
    )
    streamed = "".join(e.delta.text for e in stream if e.type == "content_block_delta")
    return {"answer": answer, "streamed": streamed, "tool_calls": tool_calls}


def record_run(bundle: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the agent under ``stepfork.record`` into ``bundle``; return its result.
    An existing bundle is replaced only with ``overwrite`` (else ``TraceStorageError``, code
    ``already_exists``, before the agent runs)."""
    with record("anthropic-weather-agent", output=bundle, overwrite=overwrite, run_input=QUESTION) as session:
        result = run_agent()
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record BUNDLE.sftrace [--overwrite]``: record, print the result as JSON (exit 2: bad input)."""
    import anthropic_agent  # record through the imported module (tagged values name their class)

    return record_main(argv, {"record": anthropic_agent.record_run})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
