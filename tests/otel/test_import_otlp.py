"""``import_otlp`` and ``stepfork import`` on spans made with the real OTel SDK (issue 15, docs/import.md).

Input forms (OTLP/JSON document, the file exporter's JSON lines, OTLP protobuf, a directory), the mapping
of each convention (GenAI new and event-based forms, OpenInference), parentage, order, failures, several
traces, redaction, and bad input (one line, exit 2).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import Status, StatusCode

from stepfork.analysis.otlp import OtlpDecodeError, OtlpImportError, import_otlp
from stepfork.trace.bundle import Trace, read_extension

from .conftest import Done, run, stepfork_exe

REQUEST = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "temperature": 0,
}
RESPONSE = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Sunny."},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}


def openinference_run(tracer: Any, *, fail_tool: bool = False, secret: str = "") -> None:
    with tracer.start_as_current_span(
        "agent", attributes={"openinference.span.kind": "AGENT", "input.value": "Weather in Paris?"}
    ) as agent:
        request = {
            **REQUEST,
            "messages": [{"role": "user", "content": f"Weather in Paris? {secret}".strip()}],
        }
        with tracer.start_as_current_span(
            "ChatCompletion",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.provider": "openai",
                "llm.model_name": "gpt-4o-mini",
                "input.value": json.dumps(request),
                "input.mime_type": "application/json",
                "output.value": json.dumps(RESPONSE),
                "output.mime_type": "application/json",
                "llm.token_count.prompt": 10,
                "llm.token_count.completion": 2,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "get_weather",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "input.value": json.dumps({"city": "Paris"}),
                "input.mime_type": "application/json",
            },
        ) as tool:
            if fail_tool:
                tool.record_exception(TimeoutError("weather service timed out"))
                tool.set_status(Status(StatusCode.ERROR, "weather service timed out"))
            else:
                tool.set_attribute("output.value", json.dumps({"celsius": 21}))
                tool.set_attribute("output.mime_type", "application/json")
        if fail_tool:
            agent.record_exception(TimeoutError("weather service timed out"))
            agent.set_status(Status(StatusCode.ERROR, "weather service timed out"))
        else:
            agent.set_attribute("output.value", "Sunny.")


@pytest.mark.parametrize("name", ["spans.json", "spans.jsonl", "spans.pb"])
def test_every_input_form_gives_the_same_bundle(name: str, sdk_spans: Callable[..., Path]) -> None:
    (trace,) = import_otlp(sdk_spans(openinference_run, name))
    kinds = [e.type.value for e in trace.events]
    assert kinds == ["run_start", "llm_request", "llm_response", "tool_call", "tool_result", "run_end"]
    run_start, request, response, tool, result, run_end = trace.events
    assert run_start.input == "Weather in Paris?"
    assert run_end.output == "Sunny."
    assert trace.status.value == "completed"
    assert trace.agent_name == "sdk-agent"
    # shaped like the HTTP capture records an LLM call
    assert request.input == {"method": "POST", "path": "/v1/chat/completions", "headers": {}, "body": REQUEST}
    assert (request.provider, request.model) == ("openai", "gpt-4o-mini")
    assert response.output == {
        "status": 200,
        "headers": {"content-type": "application/json"},
        "json": RESPONSE,
    }
    assert (response.prompt_tokens, response.completion_tokens, response.total_tokens) == (10, 2, 12)
    assert (tool.name, tool.input, result.output) == ("get_weather", {"city": "Paris"}, {"celsius": 21})
    # parentage: calls hang off run_start, results off their call
    assert request.parent_id == tool.parent_id == run_start.id
    assert (response.parent_id, result.parent_id) == (request.id, tool.id)
    assert [e.step for e in trace.events] == list(range(6))
    assert trace.import_info["calls"][request.id] == {
        "span_id": trace.import_info["calls"][request.id]["span_id"],
        "content_captured": True,
    }


def test_a_directory_of_files_and_several_traces(sdk_spans: Callable[..., Path], tmp_path: Path) -> None:
    first = sdk_spans(openinference_run, "a.jsonl")
    second = sdk_spans(lambda t: openinference_run(t, fail_tool=True), "b.pb")
    folder = tmp_path / "spans"
    folder.mkdir()
    first.rename(folder / first.name)
    second.rename(folder / second.name)
    traces = import_otlp(folder)
    assert [t.status.value for t in traces] == ["completed", "failed"]
    only = import_otlp(folder, trace_id=traces[1].trace_id.upper())
    assert [t.trace_id for t in only] == [traces[1].trace_id]
    with pytest.raises(OtlpImportError, match="no trace 'ffff'"):
        import_otlp(folder, trace_id="ffff")

    done = run([stepfork_exe(), "import", str(folder), "-o", "out"], tmp_path)
    assert done.code == 0, done.text
    assert "Imported 2 traces into out" in done.out
    for trace in traces:
        assert trace.trace_id in done.out
        assert Trace.load(tmp_path / "out" / f"{trace.trace_id}.sftrace").run_id == trace.run_id
    assert run([stepfork_exe(), "import", str(folder), "-o", "out"], tmp_path).code == 2  # exists


def test_a_failed_tool_and_run_become_recorded_failures(sdk_spans: Callable[..., Path]) -> None:
    (trace,) = import_otlp(sdk_spans(lambda t: openinference_run(t, fail_tool=True), "spans.pb"))
    result = next(e for e in trace.events if e.type.value == "tool_result")
    assert result.status.value == "error"
    assert result.output == {"error_type": "TimeoutError", "message": "weather service timed out"}
    assert trace.status.value == "failed"
    assert trace.failure is not None
    assert (trace.failure.type, trace.failure.message) == ("TimeoutError", "weather service timed out")
    assert trace.events[-1].run_status.value == "failed"


def test_secrets_in_production_content_are_redacted_on_import(
    sdk_spans: Callable[..., Path], tmp_path: Path
) -> None:
    secret = "Bearer sk-live-1234567890abcdefghij1234567890"
    (trace,) = import_otlp(sdk_spans(lambda t: openinference_run(t, secret=secret), "spans.json"))
    bundle = trace.save(tmp_path / "run.sftrace")
    for path in bundle.iterdir():
        assert "sk-live-1234567890" not in path.read_text()
    assert "[REDACTED]" in (bundle / "events.jsonl").read_text()


def genai_new_form(tracer: Any) -> None:
    with tracer.start_as_current_span(
        "invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.request.temperature": 0.5,
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "id": "c1",
                                    "name": "get_weather",
                                    "arguments": {"city": "Paris"},
                                }
                            ],
                            "finish_reason": "tool_calls",
                        }
                    ]
                ),
                "gen_ai.tool.definitions": json.dumps(
                    [
                        {
                            "type": "function",
                            "name": "get_weather",
                            "description": "d",
                            "parameters": {"type": "object"},
                        }
                    ]
                ),
                "gen_ai.response.id": "chatcmpl-9",
                "gen_ai.usage.input_tokens": 7,
                "gen_ai.usage.output_tokens": 3,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
                "gen_ai.tool.call.result": json.dumps({"celsius": 21}),
            },
        ):
            pass


def test_genai_new_form_maps_to_a_partial_chat_completions_call(sdk_spans: Callable[..., Path]) -> None:
    (trace,) = import_otlp(sdk_spans(genai_new_form, "spans.pb"), convention="genai")
    request, response, tool, result = trace.events[1:5]
    assert request.input["body"] == {
        "model": "gpt-4o-mini",
        "temperature": 0.5,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "tools": [
            {"type": "function", "name": "get_weather", "description": "d", "parameters": {"type": "object"}}
        ],
    }
    info = trace.import_info["calls"][request.id]
    assert info["fields"] == ["messages", "model", "temperature", "tools"]
    assert info["normalize"] == {"messages": "genai", "tools": "genai"}
    body = response.output["json"]
    assert body["id"] == "chatcmpl-9"
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        "c1",
        "get_weather",
        {"city": "Paris"},
    )
    assert (response.prompt_tokens, response.completion_tokens) == (7, 3)
    assert (tool.name, tool.input, result.output) == ("get_weather", {"city": "Paris"}, {"celsius": 21})


def genai_event_form(tracer: Any) -> None:
    with tracer.start_as_current_span(
        "chat gpt-4o-mini",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
        },
    ) as span:
        span.add_event("gen_ai.system.message", {"content": "Be brief."})
        span.add_event("gen_ai.user.message", {"content": "Hi"})
        span.add_event(
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": json.dumps({"content": "Hello!"})},
        )


def test_genai_older_event_form(sdk_spans: Callable[..., Path]) -> None:
    (trace,) = import_otlp(sdk_spans(genai_event_form, "spans.json"))
    request, response = trace.events[1:3]
    assert request.input["body"]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert response.output["json"]["choices"][0]["message"] == {"role": "assistant", "content": "Hello!"}
    assert trace.import_info["calls"][request.id]["content_captured"] is True


def test_convention_filter_ignores_the_other_convention(
    sdk_spans: Callable[..., Path], tmp_path: Path
) -> None:
    spans = sdk_spans(openinference_run, "spans.json")
    (trace,) = import_otlp(spans, convention="genai")
    assert [e.type.value for e in trace.events] == ["run_start", "run_end"]
    assert trace.skipped_calls() == {"openinference": 2}  # the LLM and the TOOL span
    assert import_otlp(spans)[0].skipped_calls() == {}
    # the command says what it skipped and how to import it; the bundle is still written (exit 0)
    command = [stepfork_exe(), "import", str(spans), "-o", "g.sftrace", "--convention", "genai"]
    done: Done = run(command, tmp_path)
    assert done.code == 0
    assert "0 LLM calls, 0 tool calls" in done.out
    assert done.err.strip() == (
        "Warning: --convention genai skipped the LLM and tool spans of another convention "
        "(2 openinference); import them with --convention auto (or --convention openinference)."
    )
    done = run([stepfork_exe(), "import", str(spans), "-o", "a.sftrace"], tmp_path)
    assert (done.code, done.err) == (0, "")


def test_the_extension_is_listed_in_integrity(sdk_spans: Callable[..., Path], tmp_path: Path) -> None:
    (trace,) = import_otlp(sdk_spans(genai_new_form, "spans.pb"))
    bundle = trace.save(tmp_path / "run.sftrace")
    assert read_extension(bundle, "otel-import")["convention"] == "genai"
    listed = json.loads((bundle / "integrity.json").read_text())["files"]
    assert "otel-import.json" in listed


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"resourceLogs": []}', 'not OTLP trace data (no "resourceSpans")'),
        (b'{"resourceSpans": []}\n{broken\n', "2: invalid JSON"),
        (b"\x00\x01\x02garbage", "neither OTLP JSON nor OTLP protobuf"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(content: bytes, message: str, tmp_path: Path) -> None:
    spans = tmp_path / "spans.bin"
    spans.write_bytes(content)
    with pytest.raises(OtlpDecodeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        import_otlp(spans)
    done: Done = run([stepfork_exe(), "import", str(spans), "-o", "x.sftrace"], tmp_path)
    assert done.code == 2
    assert message in done.err
    assert "Traceback" not in done.text
    assert len(done.err.strip().splitlines()) == 1


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_an_existing_bundle_needs_overwrite(sdk_spans: Callable[..., Path], tmp_path: Path) -> None:
    spans = sdk_spans(openinference_run, "spans.pb")
    assert run([stepfork_exe(), "import", str(spans), "-o", "run.sftrace"], tmp_path).code == 0
    again = run([stepfork_exe(), "import", str(spans), "-o", "run.sftrace"], tmp_path)
    assert again.code == 2
    assert again.err.strip() == "Cannot write run.sftrace: it exists (use --overwrite)"
    assert run([stepfork_exe(), "import", str(spans), "-o", "run.sftrace", "--overwrite"], tmp_path).code == 0
