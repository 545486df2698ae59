"""Production traces from instrumentations no one here wrote, imported and replayed (issue 15, "Done when").

The weather agent (``agent/weather_otel.py``: the real OpenAI SDK on a fake transport) runs once in a fresh
interpreter traced by ``openinference-instrumentation-openai`` (spans written by the OTel file exporter,
JSON lines) or ``opentelemetry-instrumentation-openai-v2`` (spans from the SDK's InMemorySpanExporter,
encoded as OTLP protobuf by opentelemetry-exporter-otlp-proto-common). No Stepfork recording is ever made:
``stepfork import`` builds the bundle, ``stepfork replay`` runs the same agent code against it.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stepfork.replay import ReplaySession

from .conftest import GENAI_CONTENT, Done, run

pytestmark = pytest.mark.slow
ANSWER = "It is 21 degrees and sunny in Paris."
STYLES = {
    # style -> (spans file, production env, the same agent's env at replay)
    "openinference": ("spans.jsonl", {}, {"WEATHER_TRACING": "openinference"}),
    "genai": ("spans.pb", GENAI_CONTENT, {"WEATHER_TRACING": "genai", **GENAI_CONTENT}),
}


@pytest.mark.parametrize("style", list(STYLES))
def test_imported_trace_replays_matched_diverges_on_a_changed_prompt_and_exports_a_passing_test(
    style: str, work: Path, cli: Callable[..., Done], produce: Callable[..., Path]
) -> None:
    name, production, replay_env = STYLES[style]
    spans = produce(style, name, production)
    imported = cli("import", spans.name, "-o", "prod.sftrace", "--convention", style)
    assert imported.code == 0, imported.text
    assert "2 LLM calls, 2 tool calls" in imported.out
    assert cli("validate", "prod.sftrace", "--verify-integrity").code == 0
    # no credential of the production client anywhere in the bundle
    assert not [p for p in (work / "prod.sftrace").iterdir() if "sk-prod-secret-key" in p.read_text()]

    replayed = cli("replay", "prod.sftrace", "--entrypoint", "weather_otel:run_agent", env=replay_env)
    assert replayed.code == 0, replayed.text
    assert "Dependency matching: COMPLETE" in replayed.out
    assert "Recorded behavior: MATCHED" in replayed.out
    partial = "matched on partial input" in replayed.out
    # openai-v2 records the messages but not `tools`: those calls are partial, and said so
    assert partial is (style == "genai")

    changed = cli(
        "replay",
        "prod.sftrace",
        "--entrypoint",
        "weather_otel:run_agent",
        env={**replay_env, "WEATHER_USER_TEMPLATE": "Please answer: {question}"},
    )
    assert changed.code == 1, changed.text
    assert "input diverged from the recording at $.body.messages[1].content" in changed.out

    (work / "expected.json").write_text(json.dumps(ANSWER))
    exported = cli(
        "export",
        "prod.sftrace",
        "--pytest",
        "--entrypoint",
        "weather_otel:run_agent",
        "--expect-output",
        "expected.json",
        "--output",
        "test_regression.py",
        env=replay_env,
    )
    assert exported.code == 0, exported.text
    ran = cli("run", "test_regression.py", env=replay_env)
    assert ran.code == 0, ran.text
    assert "Verdict: PASSED" in ran.out


def test_executed_calls_say_which_calls_matched_on_partial_input(
    work: Path, cli: Callable[..., Done], produce: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    produce("genai", "spans.pb", GENAI_CONTENT)
    assert cli("import", "spans.pb", "-o", "prod.sftrace").code == 0
    monkeypatch.setenv("WEATHER_TRACING", "genai")
    monkeypatch.syspath_prepend(str(work))
    agent = importlib.import_module("weather_otel")
    try:
        with ReplaySession.from_trace(work / "prod.sftrace") as session:
            assert agent.run_agent() == ANSWER
    finally:
        sys.modules.pop("weather_otel", None)
        sys.modules.pop("fake_providers", None)
    assert [(c.kind, c.action, c.match) for c in session.executed_calls] == [
        ("llm", "substituted", "partial"),
        ("tool", "substituted", "full"),
        ("tool", "substituted", "full"),
        ("llm", "substituted", "partial"),
    ]
    assert [m.match for m in session.matched] == ["partial", "full", "full", "partial"]
    # the report keeps the whole live input (tools included), only the comparison was partial
    assert session.executed_calls[0].input["body"]["tools"][0]["function"]["name"] == "get_weather"


def test_content_capture_off_imports_but_replay_says_how_to_turn_it_on(
    work: Path, cli: Callable[..., Done], produce: Callable[..., Path]
) -> None:
    spans = produce("genai", "spans.pb", {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"})
    imported = cli("import", spans.name, "-o", "prod.sftrace")
    assert imported.code == 0, imported.text
    assert "recorded without content" in imported.out
    validated = cli("validate", "prod.sftrace")
    assert validated.code == 0
    assert (
        "warning: content_not_captured: 4 of 4 imported calls were recorded without content" in validated.out
    )
    inspected = cli("inspect", "prod.sftrace")
    assert "content not captured" in inspected.out
    assert json.loads(cli("inspect", "prod.sftrace", "--json").out)["imported"]["not_captured"] == 4

    replayed = cli(
        "replay", "prod.sftrace", "--entrypoint", "weather_otel:run_agent", env={"WEATHER_TRACING": "genai"}
    )
    assert replayed.code == 2, replayed.text
    lines = [line for line in replayed.out.splitlines() if "recorded without content" in line]
    assert lines[0].strip() == (
        "call #1: LLM call 'openai/gpt-4o-mini' was imported from a trace recorded without content, so there "
        "is no response to serve; to record content, set "
        "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental and "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only where the agent runs, then import the "
        "new trace"
    )


def test_a_streamed_call_traced_by_openinference_replays_as_a_stream(
    work: Path, cli: Callable[..., Done]
) -> None:
    (work / "stream_agent.py").write_text(
        '''"""A streamed answer (stream=True), traced by openinference-instrumentation-openai."""
import sys

import httpx2
import openai
from fake_providers import FakeProvider

from stepfork.integrations.openai import instrument_openai


def run_agent() -> str:
    http = httpx2.Client(transport=FakeProvider().transport())
    client = instrument_openai(openai.OpenAI(api_key="sk-prod-secret-key", http_client=http, max_retries=0))
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


if __name__ == "__main__":
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(sys.argv[1])))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    print(run_agent())
    provider.shutdown()
'''
    )
    produced = run([sys.executable, "stream_agent.py", "spans.jsonl"], work)
    assert produced.code == 0, produced.text
    assert cli("import", "spans.jsonl", "-o", "stream.sftrace").code == 0
    replayed = cli("replay", "stream.sftrace", "--entrypoint", "stream_agent:run_agent")
    assert replayed.code == 0, replayed.text
    assert "1. llm openai/gpt-4o-mini (substituted)" in replayed.out
    assert f"Final result: {json.dumps(ANSWER)}" in replayed.out
    # no run span around the call: the trace recorded no run output to compare with
    assert "Recorded behavior: NOT RECORDED" in replayed.out
