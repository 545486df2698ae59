"""A weather agent on smolagents, as a ``ToolCallingAgent`` and as a ``CodeAgent``.

Written as smolagents' docs write it (huggingface.co/docs/smolagents: "Guided tour", "Tools"): tools made
with ``@tool`` (a docstring with an ``Args:`` section), ``OpenAIServerModel`` on an OpenAI-compatible API.
There is no Stepfork line: under ``stepfork record --`` each tool call is recorded and, in a frozen replay,
served from the recording (docs/integrations.md, "Framework tools"). Record and replay it:

    stepfork record -o run.sftrace -- python weather_smolagents.py tools Paris
    stepfork replay run.sftrace -- python weather_smolagents.py tools Paris

``tools`` runs the ``ToolCallingAgent`` (the model calls the tools through the API's tool calls), ``code``
the ``CodeAgent`` (the model writes Python that calls them, run by smolagents' local interpreter).
"""

import os
import sys
import uuid

from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool


@tool
def get_weather(city: str) -> str:
    """
    Get the current weather in a city.

    Args:
        city: the city's name.
    """
    return f"The weather in {city} is sunny, 21 degrees (report wr_{uuid.uuid4().hex[:20]})."


@tool
def get_air_quality(city: str) -> str:
    """
    Get the air quality index of a city.

    Args:
        city: the city's name.
    """
    return f"The air quality index in {city} is 42 (good)."


model = OpenAIServerModel(
    model_id="gpt-4o-mini",
    api_base=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
    api_key=os.environ["OPENAI_API_KEY"],
)


def main(kind: str = "tools", city: str = "Paris") -> str:
    agent_class = CodeAgent if kind == "code" else ToolCallingAgent
    agent = agent_class(tools=[get_weather, get_air_quality], model=model, verbosity_level=0)
    return str(agent.run(f"What is the weather in {city}?"))


if __name__ == "__main__":
    print(main(*sys.argv[1:3]))
