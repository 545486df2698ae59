"""A triage agent that hands off to a weather agent with two function tools, on the OpenAI Agents SDK.

Written as the Agents SDK's docs write it (openai.github.io/openai-agents-python: "Quickstart", "Tools",
"Handoffs", "Running agents", "Streaming"), with no Stepfork line: under ``stepfork record --`` each
``@function_tool`` call is recorded as a tool call and, in a frozen replay, served from the recording
(docs/integrations.md, "Framework tools"). The model is whatever ``OPENAI_BASE_URL`` names (api.openai.com
by default; the tests start a local OpenAI-compatible server). Record and replay it:

    stepfork record -o run.sftrace -- python weather_agents.py run Paris
    stepfork replay run.sftrace -- python weather_agents.py run Paris

``run`` uses ``Runner.run``, ``sync`` ``Runner.run_sync`` and ``stream`` ``Runner.run_streamed`` (the text
deltas are printed as they come).
"""

import asyncio
import sys
import uuid
from typing import Any

from agents import Agent, RunContextWrapper, Runner, function_tool
from openai.types.responses import ResponseTextDeltaEvent


@function_tool
async def get_weather(ctx: RunContextWrapper[Any], city: str) -> str:
    """Get the current weather in a city."""
    return f"The weather in {city} is sunny, 21 degrees (report wr_{uuid.uuid4().hex[:20]})."


@function_tool
def get_air_quality(city: str) -> str:
    """Get the air quality index of a city."""
    return f"The air quality index in {city} is 42 (good)."


weather_agent = Agent(
    name="Weather agent",
    handoff_description="Specialist agent for weather questions",
    instructions="You answer questions about the weather. Use the tools.",
    tools=[get_weather, get_air_quality],
)

triage_agent = Agent(
    name="Triage agent",
    instructions="You determine which agent to use based on the user's question.",
    handoffs=[weather_agent],
)


async def ask(how: str, question: str) -> str:
    if how == "stream":
        result = Runner.run_streamed(triage_agent, input=question)
        async for event in result.stream_events():
            if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                print(event.data.delta, end="", flush=True)
        print()
        return str(result.final_output)
    result = await Runner.run(triage_agent, question)
    return str(result.final_output)


def main(how: str = "run", city: str = "Paris") -> str:
    question = f"What is the weather in {city}?"
    if how == "sync":
        return str(Runner.run_sync(triage_agent, question).final_output)
    return asyncio.run(ask(how, question))


if __name__ == "__main__":
    print(main(*sys.argv[1:3]))
