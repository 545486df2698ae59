"""A tool-using LangChain agent (LangGraph's prebuilt ReAct agent on ChatOpenAI), traced in production by
OpenInference (issue 15 tests).

Written as LangChain's and LangGraph's docs write it: ``@tool`` functions, ``ChatOpenAI`` (the real openai
SDK; its HTTP client's transport is the fake provider of ``fake_providers.py``) and
``create_react_agent(model, tools)``; production tracing is ``openinference-instrumentation-langchain``'s
``LangChainInstrumentor`` with the OTel file exporter, and an OpenInference AGENT span around the run. The
Stepfork lines (``instrument_httpx`` on the HTTP client, ``@trace_tool`` under ``@tool``) do nothing without
a session.

    python langchain_otel.py produce spans.jsonl
"""

from __future__ import annotations

import os
import sys
import warnings

import httpx2
from fake_providers import FakeProvider
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from opentelemetry import trace

from stepfork.integrations.httpx import instrument_httpx
from stepfork.trace import trace_tool

with warnings.catch_warnings():  # LangGraph 1.x: deprecated in favour of langchain.agents.create_agent
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

QUESTION = "Weather in Paris and Lyon?"
SYSTEM = os.environ.get("WEATHER_SYSTEM", "You are a weather assistant.")
tracer = trace.get_tracer("weather-agent")


@tool
@trace_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: {21 if city == 'Paris' else 18}C, sunny"


def run_agent(question: str = QUESTION) -> str:
    """Answer ``question``. The run's span (docs/import.md, "The run") records the question and the
    answer: LangGraph's own root span records the graph state, whose messages get fresh ids every run."""
    http = instrument_httpx(httpx2.Client(transport=FakeProvider().transport()), provider="openai")
    model = ChatOpenAI(
        model="gpt-4o-mini", temperature=0, api_key="sk-prod-secret-key", http_client=http, max_retries=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(model, [get_weather], prompt=SYSTEM)
    attrs = {"openinference.span.kind": "AGENT", "input.value": question, "input.mime_type": "text/plain"}
    with tracer.start_as_current_span("weather-agent", attributes=attrs) as span:
        state = agent.invoke({"messages": [{"role": "user", "content": question}]})
        answer = str(state["messages"][-1].content)
        span.set_attribute("output.value", answer)
        return answer


def produce(out: str) -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(out)))
    trace.set_tracer_provider(provider)
    LangChainInstrumentor().instrument(tracer_provider=provider)
    print(run_agent())
    provider.shutdown()


if __name__ == "__main__":
    if sys.argv[1:2] == ["produce"]:
        produce(sys.argv[2])
