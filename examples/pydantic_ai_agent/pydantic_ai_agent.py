"""A pydantic-ai agent recorded and replayed by Stepfork (docs/integrations.md).

The agent runs on pydantic-ai's own test model, ``FunctionModel`` (scripted: a ``get_weather`` tool call,
then the answer); no network, no key. The model is wrapped once, ``instrument_model(model)``; the tool is
``@agent.tool_plain`` over ``@trace_tool`` (optional: pydantic-ai's tools are recorded without it,
docs/integrations.md; a tool under it is recorded once).

    python pydantic_ai_agent.py record weather.sftrace  # add --overwrite to replace an existing bundle
    stepfork replay weather.sftrace --entrypoint pydantic_ai_agent:run_agent
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from stepfork.integrations.pydantic_ai import instrument_model
from stepfork.trace import record, record_main, trace_tool

QUESTION = "Should I take an umbrella in Paris today?"


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: ask for the weather first, then answer from the tool's result."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="call_1")])
    return ModelResponse(parts=[TextPart("Sunny and 21 degrees in Paris: no umbrella needed.")])


@trace_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: sunny, 21C"


def build_agent() -> Agent[None, str]:
    """The agent on the instrumented model, with its tool."""
    agent: Agent[None, str] = Agent(instrument_model(FunctionModel(scripted_model)))
    agent.tool_plain(get_weather)
    return agent


def run_agent(question: str = QUESTION) -> dict[str, Any]:
    """Run the agent; return ``{"answer", "requests"}`` (the number of model requests)."""
    result = build_agent().run_sync(question)
    requests = sum(1 for m in result.all_messages() if isinstance(m, ModelResponse))
    return {"answer": result.output, "requests": requests}


def record_run(bundle: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the agent under ``stepfork.record`` into ``bundle``; return its result.
    An existing bundle is replaced only with ``overwrite`` (else ``TraceStorageError``, code
    ``already_exists``, before the agent runs)."""
    name = "pydantic-ai-weather-agent"
    with record(name, output=bundle, overwrite=overwrite, run_input=QUESTION) as session:
        result = run_agent()
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record BUNDLE.sftrace [--overwrite]``: record, print the result as JSON (exit 2: bad input)."""
    import pydantic_ai_agent  # record through the imported module (tagged values name their class)

    return record_main(argv, {"record": pydantic_ai_agent.record_run})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
