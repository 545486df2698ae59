"""A pydantic-ai agent as its docs write it, on ``OpenAIChatModel`` over the fake OpenAI provider
(fake_providers.py): ``Agent(model, instructions=...)``, a plain tool, ``agent.run``. Its run returns the
answer and every message of the run (``result.all_messages()``: pydantic-ai's own ``ModelRequest`` and
``ModelResponse`` shapes). data/pydantic-ai-2.68-openai.sftrace was recorded by this module under an older
pydantic-ai-slim (data/PROVENANCE.md); tests/integrations/test_sdk_upgrade_noise.py records it again under
the installed one and diffs the two.

    python pydantic_ai_agents.py record run.sftrace
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx2
import openai
from fake_providers import FakeProvider
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from stepfork.integrations.pydantic_ai import instrument_model
from stepfork.trace import record, trace_tool

INSTRUCTIONS = "Answer with the weather."
QUESTION = "Weather in Paris and Lyon?"


@trace_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: sunny, 21C"


async def arun(question: str = QUESTION) -> dict[str, Any]:
    """Run the agent; return ``{"answer", "messages"}``."""
    client = openai.AsyncOpenAI(
        api_key="sk-test", http_client=httpx2.AsyncClient(transport=FakeProvider().transport()), max_retries=0
    )
    model = instrument_model(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)))
    agent = Agent(model, instructions=INSTRUCTIONS)
    agent.tool_plain(get_weather)
    result = await agent.run(question)
    return {"answer": result.output, "messages": result.all_messages()}


def run_agent() -> dict[str, Any]:
    """The replay entrypoint."""
    return asyncio.run(arun())


def record_run(bundle: str) -> None:
    """Record :func:`arun` into ``bundle``."""

    async def main() -> None:
        async with record("pydantic-ai-openai", output=bundle, run_input=QUESTION) as session:
            session.set_output(await arun())

    asyncio.run(main())


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "record":
        sys.exit("usage: python pydantic_ai_agents.py record BUNDLE.sftrace")
    import pydantic_ai_agents  # record through the imported module (tagged values name their class)

    pydantic_ai_agents.record_run(sys.argv[2])
