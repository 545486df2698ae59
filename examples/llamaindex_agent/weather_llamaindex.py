"""A weather agent on LlamaIndex: a ``FunctionAgent`` with two tools, and a two-step workflow.

Written as LlamaIndex's docs write them (developers.llamaindex.ai: "Agents", "Tools", "Workflows"): tools
are plain functions with a docstring, the LLM is ``llama_index.llms.openai.OpenAI``. There is no Stepfork
line: under ``stepfork record --`` each tool call is recorded and, in a frozen replay, served from the
recording (docs/integrations.md, "Framework tools"). ``additional_kwargs={"stream_options":
{"include_usage": True}}`` asks for the token counts in the agent's streamed answers (LlamaIndex drops it
from the requests that do not stream). The API is the one ``OPENAI_API_BASE`` names (the tests start a
local OpenAI-compatible server). Record and replay it:

    stepfork record -o run.sftrace -- python weather_llamaindex.py agent Paris
    stepfork replay run.sftrace -- python weather_llamaindex.py agent Paris

``agent`` runs the ``FunctionAgent`` (it streams the model's answers), ``workflow`` the workflow
(``ForecastFlow``: a step asks the model for a forecast, the next asks it to shorten it).
"""

import asyncio
import sys
import uuid

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.workflow import Event, StartEvent, StopEvent, Workflow, step
from llama_index.llms.openai import OpenAI

llm = OpenAI(model="gpt-4o-mini", additional_kwargs={"stream_options": {"include_usage": True}})


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"The weather in {city} is sunny, 21 degrees (report wr_{uuid.uuid4().hex[:20]})."


def get_air_quality(city: str) -> str:
    """Get the air quality index of a city."""
    return f"The air quality index in {city} is 42 (good)."


agent = FunctionAgent(
    tools=[get_weather, get_air_quality],
    llm=llm,
    system_prompt="You are a helpful assistant that answers questions about the weather.",
)


class ForecastEvent(Event):
    city: str
    forecast: str


class ForecastFlow(Workflow):
    @step
    async def forecast(self, ev: StartEvent) -> ForecastEvent:
        response = await llm.acomplete(f"What is the weather in {ev.city}?")
        return ForecastEvent(city=ev.city, forecast=str(response))

    @step
    async def shorten(self, ev: ForecastEvent) -> StopEvent:
        response = await llm.acomplete(f"Say it shorter: {ev.forecast} In {ev.city}?")
        return StopEvent(result=str(response))


async def ask(how, city):
    if how == "workflow":
        return await ForecastFlow(timeout=60).run(city=city)
    response = await agent.run(f"What is the weather in {city}?")
    return str(response)


def main(how="agent", city="Paris"):
    return asyncio.run(ask(how, city))


if __name__ == "__main__":
    print(main(*sys.argv[1:3]))
