"""A tool-using pydantic-ai agent on the real OpenAI SDK, traced in production by OpenInference (issue 15).

Written as pydantic-ai's docs write it: ``Agent(OpenAIChatModel(...))`` with ``@agent.tool_plain``;
production tracing is pydantic-ai's own instrumentation (``Agent.instrument_all()``) with OpenInference's
``OpenInferenceSpanProcessor`` and the OTel file exporter. The Stepfork lines (``instrument_openai`` on
the client, ``@trace_tool``) do nothing without a session.

    python pydantic_ai_otel.py produce spans.jsonl
"""

from __future__ import annotations

import os
import sys
from typing import Any

import httpx2
import openai
from fake_providers import FakeProvider
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from stepfork.integrations.openai import instrument_openai
from stepfork.trace import trace_tool

QUESTION = os.environ.get("WEATHER_QUESTION", "Weather in Paris and Lyon?")
TOOL_DOC = os.environ.get("WEATHER_TOOL_DOC", "Current weather of a city.")


@trace_tool
def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "celsius": 21}


get_weather.__doc__ = TOOL_DOC  # the tool description the model sees


def build_agent() -> Agent[None, str]:
    http = httpx2.AsyncClient(transport=FakeProvider().transport())
    client = instrument_openai(
        openai.AsyncOpenAI(api_key="sk-prod-secret-key", http_client=http, max_retries=0)
    )
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    agent: Agent[None, str] = Agent(model, system_prompt="You are a weather assistant.")
    agent.tool_plain(get_weather)
    return agent


def run_agent(question: str = QUESTION) -> str:
    return build_agent().run_sync(question).output


def produce(out: str) -> None:
    from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(OpenInferenceSpanProcessor())
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(out)))
    trace.set_tracer_provider(provider)
    Agent.instrument_all()
    print(run_agent())
    provider.shutdown()


if __name__ == "__main__":
    if sys.argv[1:2] == ["produce"]:
        produce(sys.argv[2])
