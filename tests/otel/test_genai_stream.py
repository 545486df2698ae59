"""Streamed LLM calls traced with the GenAI conventions import and replay as streams (issue 15).

``opentelemetry-instrumentation-openai-v2`` traces a ``stream=True`` call as one span holding the
accumulated answer and does not record ``stream``. The imported call holds that completion; the same
streaming agent code replays MATCHED, served the SSE events the HTTP capture records for a streamed call
(built by the one builder OpenInference streams use: ``stepfork.replay.imported.streamed_output``). A span
that does record ``gen_ai.request.stream`` imports in the SSE form directly. Production runs in a fresh
interpreter (the instrumentor patches the SDK); import and replay run in process.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis.otlp import import_otlp
from stepfork.replay import replay_entrypoint
from stepfork.trace.bundle import Trace

from .conftest import GENAI_CONTENT, run

pytestmark = pytest.mark.slow
ANSWER = "It is 21 degrees and sunny in Paris."
STREAM_AGENT = '''"""A streamed answer (stream=True), traced by opentelemetry-instrumentation-openai-v2."""
import os
import sys

import httpx2
import openai
from fake_providers import FakeProvider
from opentelemetry import trace

from stepfork.integrations.openai import instrument_openai

tracer = trace.get_tracer("stream-agent")
QUESTION = os.environ.get("STREAM_QUESTION", "Weather in Paris?")


def run_agent(question: str = "Weather in Paris?") -> str:
    http = httpx2.Client(transport=FakeProvider().transport())
    client = instrument_openai(openai.OpenAI(api_key="sk-prod-secret-key", http_client=http, max_retries=0))
    attrs = {"gen_ai.operation.name": "invoke_agent", "input.value": question}
    with tracer.start_as_current_span("invoke_agent weather", attributes=attrs) as span:
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": QUESTION}],
            stream=True,
            stream_options={"include_usage": True},
        )
        parts, usage = [], None
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage.total_tokens
            if chunk.choices:
                parts.append(chunk.choices[0].delta.content or "")
        answer = f"{''.join(parts)} ({usage} tokens)"
        span.set_attribute("output.value", answer)
        return answer


if __name__ == "__main__":
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(sys.argv[1])))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    print(run_agent())
    provider.shutdown()
'''


def _llm_output(trace: Trace) -> Any:
    return next(e.output for e in trace.events if e.type == "llm_response")


def test_a_streamed_call_traced_by_openai_v2_replays_as_a_stream(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "stream_agent.py").write_text(STREAM_AGENT)
    produced = run([sys.executable, "stream_agent.py", "spans.jsonl"], work, GENAI_CONTENT)
    assert produced.code == 0, produced.text
    production_answer = produced.out.strip()
    assert production_answer.startswith(ANSWER)
    [imported] = import_otlp(work / "spans.jsonl")
    assert imported.partial() == 1
    bundle = imported.save(work / "stream.sftrace")

    monkeypatch.syspath_prepend(str(work))
    try:
        agent = importlib.import_module("stream_agent")
        outcome = replay_entrypoint(bundle, agent.run_agent)
        assert outcome.exit_code == 0, outcome
        # MATCHED against the production answer: the SDK read a stream with the text and the usage chunk
        # the live request asked for
        assert outcome.behavior.status == "MATCHED"
        assert outcome.result == production_answer
        assert production_answer.endswith(" tokens)")
        assert [(c.kind, c.match) for c in outcome.calls] == [("llm", "partial")]
        # the held fields still diverge at their path
        monkeypatch.setenv("STREAM_QUESTION", "Weather in Lyon?")
        importlib.reload(agent)
        changed = replay_entrypoint(bundle, agent.run_agent)
        assert changed.exit_code == 1
        assert "$.body.messages[0].content" in json.dumps(changed.to_dict())
    finally:
        sys.modules.pop("stream_agent", None)
        sys.modules.pop("fake_providers", None)


def test_a_span_that_records_stream_imports_as_sse(sdk_spans: Callable[..., Path]) -> None:
    def build(tracer: Any) -> None:
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.request.stream": True,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "Sunny."}],
                        "finish_reason": "stop",
                    }
                ]
            ),
            "gen_ai.response.id": "chatcmpl-9",
        }
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes=attrs):
            pass

    [imported] = import_otlp(sdk_spans(build, "spans.json"))
    request = next(e.input for e in imported.events if e.type == "llm_request")
    assert request["body"]["stream"] is True
    assert "stream" in next(iter(imported.import_info["calls"].values()))["fields"]
    output = _llm_output(imported)
    assert output["headers"] == {"content-type": "text/event-stream"}
    events = output["sse"]["events"]
    assert events[0]["data"]["choices"][0]["delta"]["content"] == "Sunny."
    assert events[0]["data"]["object"] == "chat.completion.chunk"
    assert events[-1] == {"text": "[DONE]"}
