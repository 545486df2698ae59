"""A weather agent on the real OpenAI SDK, recorded and replayed by Stepfork (docs/integrations.md).

The client is an ordinary ``openai.OpenAI`` whose HTTP transport is the local fake API of
``fake_openai.py`` (realistic Chat Completions and Responses payloads, a streamed answer); no network, no
key. One line instruments it: ``instrument_openai(client)``. The agent asks the model, which calls the
``get_weather`` tool; it downloads a binary forecast (non-UTF-8 bytes two levels deep, CASES C3), sends a
report from a worker thread with a bearer token in an unremarkable field (redacted, C5), streams the final
answer and summarizes it with the Responses API.

    python openai_agent.py record weather.sftrace  # add --overwrite to replace an existing bundle
    stepfork replay weather.sftrace --entrypoint openai_agent:run_agent
"""

from __future__ import annotations

import contextvars
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from fake_openai import FakeOpenAI

from stepfork.integrations.openai import instrument_openai
from stepfork.trace import record, record_main, trace_tool

MODEL = "gpt-4o-mini"
QUESTION = "Should I take an umbrella in Paris today?"
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


@dataclass
class Report:
    """What the agent sends to the reporting service; ``header`` holds a credential (C5)."""

    city: str
    header: str


@trace_tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather service (a tool: recorded, served from the bundle on replay)."""
    return {"city": city, "celsius": 21, "sky": "sunny"}


@trace_tool
def download_forecast(city: str) -> dict[str, Any]:
    """A binary forecast file: bytes that are not UTF-8, two levels deep (C3)."""
    return {"file": {"name": f"{city.lower()}.grib", "data": bytes([0xFF, 0xFE, 0x00, 0x80, 0x7F])}}


@trace_tool
def send_report(report: Report) -> str:
    """The reporting service, called from a worker thread; the bearer token must never be recorded."""
    return f"report for {report.city} accepted"


def make_client() -> openai.OpenAI:
    """An instrumented OpenAI client talking to the local fake API."""
    http = httpx2.Client(transport=FakeOpenAI().transport())
    return instrument_openai(openai.OpenAI(api_key="sk-local-example", http_client=http, max_retries=0))


def run_agent(question: str = QUESTION) -> dict[str, Any]:
    """Answer ``question``; return ``{"answer", "summary", "forecast_is_bytes", "report"}``."""
    client = make_client()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a concise weather assistant."},
        {"role": "user", "content": question},
    ]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0)
    tool_call = first.choices[0].message.tool_calls[0]
    weather = get_weather(**json.loads(tool_call.function.arguments))
    forecast = download_forecast(weather["city"])
    report = Report(city=weather["city"], header="Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.sig")
    with ThreadPoolExecutor(max_workers=1) as pool:  # the worker carries the session's context
        receipt = pool.submit(contextvars.copy_context().run, send_report, report).result()
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        # sort_keys: a replayed dict comes back in the bundle's (sorted) key order, not the tool's.
        {"role": "tool", "tool_call_id": tool_call.id, "content": json.dumps(weather, sort_keys=True)},
    ]
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True}
    )
    answer = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    summary = client.responses.create(model=MODEL, input=f"Summarize in one line: {answer}")
    return {
        "answer": answer,
        "summary": summary.output_text,
        "forecast_is_bytes": isinstance(forecast["file"]["data"], bytes),
        "report": receipt,
    }


def record_run(bundle: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the agent under ``stepfork.record`` into ``bundle``; return its result.
    An existing bundle is replaced only with ``overwrite`` (else ``TraceStorageError``, code
    ``already_exists``, before the agent runs)."""
    with record("openai-weather-agent", output=bundle, overwrite=overwrite, run_input=QUESTION) as session:
        result = run_agent()
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record BUNDLE.sftrace [--overwrite]``: record, print the result as JSON (exit 2: bad input)."""
    # Run through the imported module, not __main__: tagged values name their class ("openai_agent.Report")
    # and that name is part of the recorded input a replay compares.
    import openai_agent

    return record_main(argv, {"record": openai_agent.record_run})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
