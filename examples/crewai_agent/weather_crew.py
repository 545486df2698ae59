"""A one-agent weather crew on CrewAI, with two tools.

Written as CrewAI's docs write it (docs.crewai.com: "Agents", "Tasks", "Crews", "Tools"): an ``Agent`` with
a role, goal and backstory, a ``Task``, a ``Crew`` kicked off with inputs, tools made with ``@tool``; no
Stepfork line: under ``stepfork record --`` each tool call is recorded and, in a frozen replay, served from
the recording (docs/integrations.md, "Framework tools"). The model is ``gpt-4o-mini`` at
``OPENAI_BASE_URL`` (the tests start a local OpenAI-compatible server). Record and replay it:

    stepfork record -o run.sftrace -- python weather_crew.py Paris
    stepfork replay run.sftrace -- python weather_crew.py Paris
"""

import sys
import uuid

from crewai import Agent, Crew, Process, Task
from crewai.tools import tool


@tool("get_weather")
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"The weather in {city} is sunny, 21 degrees (report wr_{uuid.uuid4().hex[:20]})."


@tool("get_air_quality")
def get_air_quality(city: str) -> str:
    """Get the air quality index of a city."""
    return f"The air quality index in {city} is 42 (good)."


reporter = Agent(
    role="Weather reporter",
    goal="Tell people the weather and the air quality in their city",
    backstory="You read the weather and the clock for a local radio station.",
    tools=[get_weather, get_air_quality],
    llm="gpt-4o-mini",
)

report = Task(
    description="What is the weather in {city}?",
    expected_output="One sentence with the weather and the air quality.",
    agent=reporter,
)

crew = Crew(agents=[reporter], tasks=[report], process=Process.sequential)


def main(city="Paris"):
    return str(crew.kickoff(inputs={"city": city}))


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
