"""A weather agent on the real OpenAI SDK, traced in production by OpenTelemetry (issue 15 tests).

The agent is written as the SDKs' docs write it: an ``openai.OpenAI`` client (its transport is the fake
provider of ``fake_providers.py``), a tool loop, and a span around the run. Production tracing is either
OpenInference (``openinference-instrumentation-openai`` + its ``OITracer`` for the agent and tool spans) or
the GenAI conventions (``opentelemetry-instrumentation-openai-v2`` + ``execute_tool``/``invoke_agent`` spans
made with the OTel API), chosen by ``WEATHER_TRACING``. Stepfork is never recording here: the two Stepfork
lines (``instrument_openai`` and ``@trace_tool``) do nothing without a session, and let
``stepfork replay --entrypoint weather_otel:run_agent`` serve the imported calls.

    python weather_otel.py produce openinference spans.jsonl   # spans via the OTel file exporter
    python weather_otel.py produce genai spans.pb               # spans via the OTLP protobuf encoder
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import httpx2
import openai
from fake_providers import FakeProvider
from opentelemetry import trace

from stepfork.integrations.openai import instrument_openai
from stepfork.trace import trace_tool

MODEL = "gpt-4o-mini"
QUESTION = "Weather in Paris and Lyon?"
# how the question is put to the model: a test changes it to stand for a changed prompt in the agent's code
# (the question itself is the run's recorded input, which replay passes back to run_agent)
USER_TEMPLATE = os.environ.get("WEATHER_USER_TEMPLATE", "{question}")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
tracer = trace.get_tracer("weather-agent")


def _style() -> str:
    return os.environ.get("WEATHER_TRACING", "openinference")


def _content() -> bool:
    return os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "") not in (
        "",
        "NO_CONTENT",
        "false",
    )


@trace_tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather service (a tool span in production, a recorded tool for Stepfork)."""
    result = {"city": city, "celsius": 21 if city == "Paris" else 18, "sky": "sunny"}
    if _style() == "openinference":
        attrs = {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": json.dumps({"city": city}),
            "input.mime_type": "application/json",
            "output.value": json.dumps(result),
            "output.mime_type": "application/json",
        }
    else:
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"}
        if _content():
            attrs["gen_ai.tool.call.arguments"] = json.dumps({"city": city})
            attrs["gen_ai.tool.call.result"] = json.dumps(result)
    with tracer.start_as_current_span("execute_tool get_weather", attributes=attrs):
        return result


def make_client() -> openai.OpenAI:
    http = httpx2.Client(transport=FakeProvider().transport())
    return instrument_openai(openai.OpenAI(api_key="sk-prod-secret-key", http_client=http, max_retries=0))


def _loop(client: openai.OpenAI, question: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a weather assistant."},
        {"role": "user", "content": USER_TEMPLATE.format(question=question)},
    ]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0)
    message = first.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls or ():
        result = get_weather(**json.loads(call.function.arguments))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    final = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0)
    return final.choices[0].message.content or ""


def run_agent(question: str = QUESTION) -> str:
    """Answer ``question`` with the tool loop; the run's root span says what the run was."""
    client = make_client()
    if _style() == "openinference":
        attrs = {"openinference.span.kind": "AGENT", "input.value": question, "input.mime_type": "text/plain"}
        with tracer.start_as_current_span("weather-agent", attributes=attrs) as span:
            answer = _loop(client, question)
            span.set_attribute("output.value", answer)
            span.set_attribute("output.mime_type", "text/plain")
            return answer
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}
    with tracer.start_as_current_span("invoke_agent weather", attributes=attrs) as span:
        answer = _loop(client, question)
        if _content():
            span.set_attribute(
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
            )
            span.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]),
            )
        return answer


def produce(style: str, out: str) -> None:
    """Run the agent once under real OTel tracing and write its spans with the SDK's own exporters."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    os.environ["WEATHER_TRACING"] = style
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    memory = None
    if out.endswith(".jsonl"):
        from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(out)))
    else:
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    if style == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # type: ignore[no-redef]
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    print(run_agent())
    provider.shutdown()
    if memory is not None:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        with open(out, "wb") as handle:
            handle.write(encode_spans(memory.get_finished_spans()).SerializeToString())


if __name__ == "__main__":
    if sys.argv[1:2] == ["produce"]:
        produce(sys.argv[2], sys.argv[3])
