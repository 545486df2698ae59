"""LlamaIndex and CrewAI tools written as their docs write them are instrumented boundaries (issue 30).

The openai 2.x half of tests/integrations/test_framework_tools.py: a LlamaIndex ``FunctionAgent`` whose
tool is a plain function and a CrewAI crew whose tool is ``@tool("get_weather")`` (and, again, a
``BaseTool`` subclass), none with ``@trace_tool`` (as the frameworks' docs write them), each tool appending a
line to side_effects.log, against the local OpenAI-compatible server on 127.0.0.1. The tools are recorded as
tool calls named as the model sees them; a frozen replay (through the real CLI, and in-process) passes with
the line not written and the server's counter unchanged; a hybrid replay in which the live model asks about
another city diverges at the tool, at ``$.city``. In its own environment (openai 2.x): ``hatch run
openai2:test``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import LocalOpenAI, serving
from tool_agents import agent_folder, served_not_run

LLAMA_INDEX = '''"""A LlamaIndex FunctionAgent with a function tool, as LlamaIndex's docs write it."""
import asyncio
import sys

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.openai import OpenAI


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    with open("side_effects.log", "a") as f:
        f.write(f"get_weather({city}) ran\\n")
    return f"The weather in {city} is sunny."


agent = FunctionAgent(
    tools=[get_weather],
    llm=OpenAI(model="gpt-4o-mini"),
    system_prompt="You are a helpful assistant that answers questions about the weather.",
)


async def ask(city):
    response = await agent.run(f"What is the weather in {city}?")
    return str(response)


def main(city="Paris"):
    return asyncio.run(ask(city))


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
'''

CREWAI = '''"""A one-agent CrewAI crew with a tool, as CrewAI's docs write it."""
import sys

from crewai import Agent, Crew, Process, Task
from crewai.tools import tool


@tool("get_weather")
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    with open("side_effects.log", "a") as f:
        f.write(f"get_weather({city}) ran\\n")
    return f"The weather in {city} is sunny."


reporter = Agent(
    role="Weather reporter",
    goal="Tell people the weather in their city",
    backstory="You read the weather for a local radio station.",
    tools=[get_weather],
    llm="gpt-4o-mini",
)
report = Task(
    description="What is the weather in {city}?",
    expected_output="One sentence with the weather.",
    agent=reporter,
)
crew = Crew(agents=[reporter], tasks=[report], process=Process.sequential)


def main(city="Paris"):
    return str(crew.kickoff(inputs={"city": city}))


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
'''


CREWAI_CLASS = CREWAI.replace(
    '''from crewai.tools import tool


@tool("get_weather")
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    with open("side_effects.log", "a") as f:
        f.write(f"get_weather({city}) ran\\n")
    return f"The weather in {city} is sunny."
''',
    """from crewai.tools import BaseTool
from pydantic import BaseModel, Field


class WeatherInput(BaseModel):
    city: str = Field(..., description="The city's name.")


class WeatherTool(BaseTool):
    name: str = "get_weather"
    description: str = "Get the current weather in a city."
    args_schema: type[BaseModel] = WeatherInput

    def _run(self, city: str) -> str:
        with open("side_effects.log", "a") as f:
            f.write(f"get_weather({city}) ran\\n")
        return f"The weather in {city} is sunny."


get_weather = WeatherTool()
""",
)
"""The crew with its tool written as a ``BaseTool`` subclass, as CrewAI's "custom tools" guide writes one."""


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


@pytest.mark.parametrize(
    ("module", "text"),
    [("llama_agent", LLAMA_INDEX), ("crew_agent", CREWAI), ("crew_class_agent", CREWAI_CLASS)],
)
def test_the_tool_is_recorded_served_and_diverges_at_its_argument(
    tmp_path: Path, server: LocalOpenAI, module: str, text: str
) -> None:
    program = agent_folder(tmp_path, server, {f"{module}.py": text})
    program.env["CREWAI_DISABLE_TELEMETRY"] = "true"  # the collector is out of this machine's reach
    served_not_run(program, module)
