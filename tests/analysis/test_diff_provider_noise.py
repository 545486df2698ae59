"""diff and the provider's own noise (NEWCOMER findings 7, 8 and 12; docs/diff.md "Noise rules"):
prompt-caching counters, accounting fields an SDK release adds, Gemini's and Bedrock's per-request
values, the Responses API's encrypted reasoning and its echo, and the same streamed text cut into other
events; each beside the control that a real change there is still reported."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from stepfork.analysis import diff_traces
from stepfork.trace import Trace
from stepfork.trace.models import LLMRequest, LLMResponse, RunEnd, RunStart


def run(*turns: tuple[dict[str, Any], dict[str, Any]], output: Any = "done") -> Trace:
    """A run of LLM calls as the HTTP capture records them: ``(request body, response output)`` each."""
    trace = Trace(run_id="run_x", agent_name="a")
    add: Any = trace.add
    add(RunStart(id="s", run_id="run_x", input=None))
    for number, (body, response) in enumerate(turns):
        http = {"method": "POST", "path": "/v1/x", "headers": {}, "body": body}
        add(LLMRequest(id=f"q{number}", run_id="run_x", parent_id="s", provider="p", model="m", input=http))
        add(LLMResponse(id=f"r{number}", run_id="run_x", parent_id=f"q{number}", model="m", output=response))
    add(RunEnd(id="e", run_id="run_x", parent_id="s", run_status="completed", output=output))
    return trace


def json_response(body: dict[str, Any]) -> dict[str, Any]:
    return {"status": 200, "headers": {"content-type": "application/json"}, "json": body}


def changes(a: Trace, b: Trace) -> list[str]:
    result = diff_traces(a, b)
    assert result.equivalent == (not result.changes)
    return [c.path for c in result.changes]


def noise(a: Trace, b: Trace) -> dict[str, str]:
    return {c.path: str(c.noise) for s in diff_traces(a, b).steps for c in s.ignored}


ASK = {"messages": [{"role": "user", "content": "Weather in Paris?"}]}


def chat(usage: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body = {"id": "chatcmpl-" + uuid.uuid4().hex, "choices": [{"message": {"content": "Sunny."}}]}
    return json_response({**body, "usage": usage, **extra})


def test_prompt_caching_counters_are_the_providers_accounting_and_the_token_counts_stay_compared() -> None:
    cold = {"prompt_tokens": 2006, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 0}}
    warm = copy.deepcopy(cold)
    warm["prompt_tokens_details"]["cached_tokens"] = 1920
    assert noise(run((ASK, chat(cold))), run((ASK, chat(warm)))) == {
        "output.json.id": "openai-chat-completion",
        "output.json.usage.prompt_tokens_details.cached_tokens": "prompt-caching",
    }
    written = {"input_tokens": 21, "cache_creation_input_tokens": 1024, "cache_read_input_tokens": 0}
    read = {"input_tokens": 21, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1024}
    assert not changes(run((ASK, chat(written))), run((ASK, chat(read))))
    gemini = {"promptTokenCount": 47, "totalTokenCount": 70}
    cached = {**gemini, "cachedContentTokenCount": 32}
    assert not changes(
        run((ASK, json_response({"usageMetadata": gemini}))),
        run((ASK, json_response({"usageMetadata": cached}))),
    )
    longer = {**cold, "prompt_tokens": 2100}
    assert changes(run((ASK, chat(cold))), run((ASK, chat(longer)))) == ["output.json.usage.prompt_tokens"]


def test_an_accounting_field_or_service_tier_on_one_side_is_noise_but_a_new_answer_field_is_a_change() -> (
    None
):
    usage = {"prompt_tokens": 12, "completion_tokens": 3}
    newer = {**usage, "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}
    older, upgraded = run((ASK, chat(usage))), run((ASK, chat(newer, service_tier="default")))
    assert not changes(older, upgraded)
    found = noise(older, upgraded)
    assert found["output.json.usage.completion_tokens_details"] == "new field"
    assert found["output.json.service_tier"] == "new field"
    refused = run((ASK, chat(usage, refusal="I cannot help with that.")))
    assert changes(older, refused) == ["output.json.refusal"]
    flex = run((ASK, chat(usage, service_tier="flex")))
    assert changes(upgraded, flex) == ["output.json.service_tier"]  # both hold it: compared


def reasoning_turns(blob: str, echo: str) -> tuple[tuple[dict[str, Any], dict[str, Any]], ...]:
    item = {"type": "reasoning", "id": "rs_" + uuid.uuid4().hex, "encrypted_content": blob, "summary": []}
    first = json_response({"id": "resp_" + uuid.uuid4().hex, "output": [item]})
    echoed = {**item, "encrypted_content": echo}
    second = {
        "input": [{"role": "user", "content": "Weather?"}, echoed],
        "include": ["reasoning.encrypted_content"],
    }
    return ({"input": [{"role": "user", "content": "Weather?"}]}, first), (
        second,
        json_response({"output": []}),
    )


def test_the_responses_apis_encrypted_reasoning_and_its_echo_pair_and_a_wrong_echo_is_a_change() -> None:
    def blob() -> str:
        return "gAAAAABo" + uuid.uuid4().hex + "-_" + uuid.uuid4().hex + "=="

    one, two = blob(), blob()
    assert not changes(run(*reasoning_turns(one, one)), run(*reasoning_turns(two, two)))
    assert changes(run(*reasoning_turns(one, one)), run(*reasoning_turns(two, blob()))) == [
        "input.body.input[1].encrypted_content"
    ]


def stream(*events: dict[str, Any], key: str = "sse") -> dict[str, Any]:
    body = "data" if key == "sse" else "json"
    listed = [{body: event} for event in events]
    return {
        "status": 200,
        "headers": {},
        key: {"end": "finished", "event_count": len(listed), "events": listed},
    }


def openai_chunks(*texts: str) -> dict[str, Any]:
    made = "chatcmpl-" + uuid.uuid4().hex

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        noise = uuid.uuid4().hex[: 1 + uuid.uuid4().int % 12]
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": made, "created": 1767225600, "choices": [choice], "obfuscation": noise}

    return stream(
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": text}) for text in texts),
        chunk({}, "stop"),
    )


def test_the_same_streamed_text_cut_into_other_events_is_noise_and_a_changed_text_is_still_reported() -> None:
    twelve = run((ASK, openai_chunks("It is", " 21 degrees", " and sunny", " in Paris.")))
    nine = run((ASK, openai_chunks("It is 21 degrees", " and sunny in Paris.")))
    assert not changes(twelve, nine)
    assert noise(twelve, nine)["output.sse.events"] == "stream chunking"
    rainy = run((ASK, openai_chunks("It is 21 degrees", " and rainy in Paris.")))
    assert "output.sse.events[1].data.choices[0].delta.content" in changes(twelve, rainy)


def anthropic_blocks(*blocks: list[str]) -> dict[str, Any]:
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": "msg_" + uuid.uuid4().hex}}]
    for index, pieces in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text"}})
        for piece in pieces:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
    return stream(*events)


def test_text_moved_from_one_content_block_to_another_is_a_change_not_chunking() -> None:
    base = run((ASK, anthropic_blocks(["Sunny", " in Paris."], ["Take a hat."])))
    assert not changes(base, run((ASK, anthropic_blocks(["Sunny in", " Paris."], ["Take", " a hat."]))))
    moved = run((ASK, anthropic_blocks(["Sunny in Paris. Take"], [" a hat."])))
    assert changes(base, moved)


def parallel_tool_chunks(*pieces: tuple[int, str]) -> dict[str, Any]:
    def chunk(index: int, arguments: str) -> dict[str, Any]:
        call = {"index": index, "function": {"arguments": arguments}}
        return {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}

    return stream(*(chunk(index, text) for index, text in pieces))


def test_parallel_tool_call_arguments_reassemble_per_call_index() -> None:
    base = run((ASK, parallel_tool_chunks((0, '{"city": '), (0, '"Paris"}'), (1, '{"city": "Lyon"}'))))
    recut = run((ASK, parallel_tool_chunks((0, '{"city": "Paris"}'), (1, '{"city": '), (1, '"Lyon"}'))))
    assert not changes(base, recut)
    swapped = run((ASK, parallel_tool_chunks((0, '{"city": "Lyon"}'), (1, '{"city": '), (1, '"Paris"}'))))
    assert changes(base, swapped)


def bedrock_stream(*texts: str) -> dict[str, Any]:
    def padded(event: dict[str, Any]) -> dict[str, Any]:
        return {**event, "p": uuid.uuid4().hex[: 4 + uuid.uuid4().int % 20]}

    events = [padded({"role": "assistant"})]
    events += [padded({"contentBlockIndex": 0, "delta": {"text": text}}) for text in texts]
    events.append(padded({"stopReason": "end_turn"}))
    events.append(
        padded({"usage": {"inputTokens": 9, "outputTokens": 4}, "metrics": {"latencyMs": 300 + len(texts)}})
    )
    return stream(*events, key="eventstream")


def test_bedrock_event_streams_padding_latency_and_chunking_are_noise() -> None:
    assert not changes(
        run((ASK, bedrock_stream("Sunny", " in Paris."))), run((ASK, bedrock_stream("Sunny in Paris.")))
    )
    assert not changes(
        run((ASK, bedrock_stream("Sunny in Paris."))), run((ASK, bedrock_stream("Sunny in Paris.")))
    )
    assert changes(
        run((ASK, bedrock_stream("Sunny in Paris."))), run((ASK, bedrock_stream("Rainy in Paris.")))
    )
