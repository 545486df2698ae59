"""diff and what a request carries back, and what an exchange is (NEWCOMER2 findings 11 and 12; docs/diff.md
"Noise rules").

- A field a newer API or SDK adds to the assistant message (``annotations: []``) comes back in the next
  request when the agent echoes the message (the OpenAI function-calling guide): in a provider request an
  absent key and a null, [] or {} one are the provider's default, so that is noise; ``false`` is not
  (``parallel_tool_calls: false``), and a list that lost its items is a change. The cases are data
  (data/echoed_request_fields.json: the two SDK shapes of the message, and each pair with its reason).
- An LLM API call made from a thread without the session's context is recorded as an ``http`` call; it is
  still the provider's exchange, so its response is compared by the provider rules (fingerprint, ids,
  ``created``, headers) and its request as an LLM request. A POST to another API is compared as data.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis import diff_traces
from stepfork.trace import Trace
from stepfork.trace.models import LLMRequest, LLMResponse, RunEnd, RunStart, ToolCall, ToolResult

DATA = json.loads((Path(__file__).parent / "data" / "echoed_request_fields.json").read_text())
ABSENT = "(absent)"


def request(message: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """The guide's second request: the question, the echoed assistant message, the tool's result."""
    body: dict[str, Any] = {
        "model": "gpt-4.1",
        "messages": [
            {"role": "user", "content": "What is the weather like in Paris today?"},
            message,
            {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "{'celsius': 21}"},
        ],
        "tools": copy.deepcopy(DATA["tools"]),
    }
    for key, value in override.items():
        if value == ABSENT:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def llm_run(body: dict[str, Any]) -> Trace:
    trace = Trace(run_id="run_x", agent_name="a")
    add: Any = trace.add
    add(RunStart(id="s", run_id="run_x", input=None))
    http = {"method": "POST", "path": "/v1/chat/completions", "headers": {}, "body": body}
    add(LLMRequest(id="q", run_id="run_x", parent_id="s", provider="openai", model="gpt-4.1", input=http))
    answer = {"status": 200, "headers": {}, "json": {"choices": [{"message": {"content": "21 C"}}]}}
    add(LLMResponse(id="r", run_id="run_x", parent_id="q", model="gpt-4.1", output=answer))
    add(RunEnd(id="e", run_id="run_x", parent_id="s", run_status="completed", output="21 C"))
    return trace


@pytest.mark.parametrize("case", DATA["equivalent"], ids=[c["why"] for c in DATA["equivalent"]])
def test_an_echoed_new_field_and_an_empty_default_are_noise(case: dict[str, Any]) -> None:
    older = request(DATA["messages"]["older"], case["baseline"])
    newer = request(DATA["messages"]["newer"], case["candidate"])
    result = diff_traces(llm_run(older), llm_run(newer))
    assert result.equivalent, str(result)
    noise = {c.path: c.noise for s in result.steps for c in s.ignored}
    assert noise["input.body.messages[1].annotations"] == "new field"
    assert set(noise.values()) == {"new field"}
    assert not diff_traces(llm_run(older), llm_run(newer), strict=True).equivalent


@pytest.mark.parametrize("case", DATA["changed"], ids=[c["why"] for c in DATA["changed"]])
def test_false_a_value_or_an_emptied_list_in_a_request_is_a_change(case: dict[str, Any]) -> None:
    older = request(DATA["messages"]["older"], case["baseline"])
    newer = request(DATA["messages"]["newer"], case["candidate"])
    result = diff_traces(llm_run(older), llm_run(newer))
    assert not result.equivalent
    assert result.changes[0].path == case["first"], str(result)


def test_outside_a_provider_request_an_absent_key_and_an_empty_one_still_differ() -> None:
    # an llm_request the agent recorded with its own input (not the HTTP capture's request): compared as is
    def own(inp: dict[str, Any]) -> Trace:
        trace = Trace(run_id="run_x", agent_name="a")
        add: Any = trace.add
        add(RunStart(id="s", run_id="run_x", input=None))
        add(LLMRequest(id="q", run_id="run_x", parent_id="s", provider="local", model="m", input=inp))
        add(LLMResponse(id="r", run_id="run_x", parent_id="q", model="m", output={"text": "ok"}))
        add(RunEnd(id="e", run_id="run_x", parent_id="s", run_status="completed", output="ok"))
        return trace

    result = diff_traces(own({"prompt": "hi"}), own({"prompt": "hi", "context_docs": []}))
    assert [c.path for c in result.changes] == ["input.context_docs"]


# -- an LLM API call recorded as an http call (another thread's) --------------------------------------------


def http_run(*calls: tuple[str, dict[str, Any] | None, dict[str, Any]]) -> Trace:
    """A run of ``http`` calls: ``(URL, request body, response)`` each, as the HTTP capture writes a request
    from a thread without the session's context."""
    trace = Trace(run_id="run_x", agent_name="a")
    add: Any = trace.add
    add(RunStart(id="s", run_id="run_x", input=None))
    for number, (url, body, response) in enumerate(calls):
        name = f"http POST {url}"
        add(
            ToolCall(
                id=f"c{number}",
                run_id="run_x",
                parent_id="s",
                name=name,
                input={"method": "POST", "url": url, "body": body},
            )
        )
        add(ToolResult(id=f"t{number}", run_id="run_x", parent_id=f"c{number}", name=name, output=response))
    add(RunEnd(id="e", run_id="run_x", parent_id="s", run_status="completed", output="done"))
    return trace


def completion(text: str = "Paris is the capital of France.") -> dict[str, Any]:
    """A Chat Completions response as a provider sends it: fresh id, created, fingerprint, headers."""
    body = {
        "id": "chatcmpl-" + uuid.uuid4().hex[:29],
        "object": "chat.completion",
        "created": 1796522963 + uuid.uuid4().int % 1000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_" + uuid.uuid4().hex[:10],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    }
    headers = {"content-type": "application/json", "x-request-id": "req_" + uuid.uuid4().hex}
    return {"status": 200, "headers": headers, "json": body}


CHAT = "http://127.0.0.1:8765/v1/chat/completions"
ASK = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "One line about Paris"}]}


def test_an_llm_call_recorded_as_an_http_call_is_compared_by_the_provider_rules() -> None:
    result = diff_traces(http_run((CHAT, ASK, completion())), http_run((CHAT, ASK, completion())))
    assert result.equivalent, str(result)
    noise = {c.path: c.noise for s in result.steps for c in s.ignored}
    assert noise["output.json.system_fingerprint"] == "openai-chat-completion"
    assert noise["output.headers.x-request-id"] == "openai-headers"
    other = http_run((CHAT, ASK, completion("Paris is in Texas.")))
    assert [c.path for c in diff_traces(http_run((CHAT, ASK, completion())), other).changes] == [
        "output.json.choices[0].message.content"
    ]
    asked = {**ASK, "messages": [{"role": "user", "content": "One line about Lyon"}]}
    assert (
        diff_traces(http_run((CHAT, ASK, completion())), http_run((CHAT, asked, completion())))
        .changes[0]
        .path
        == "input.body.messages[0].content"
    )


def test_a_post_to_another_api_is_compared_as_data() -> None:
    # no model in the body, no LLM API path: its id, created and fingerprint-named keys are the data
    url = "http://127.0.0.1:8765/orders"
    order = {"item": "shoes"}

    def answer(number: int) -> dict[str, Any]:
        body = {"id": number, "created": 1796522963, "system_fingerprint": f"wh-{number}"}
        return {"status": 200, "headers": {"content-type": "application/json"}, "json": body}

    result = diff_traces(http_run((url, order, answer(1))), http_run((url, order, answer(2))))
    assert [c.path for c in result.changes] == ["output.json.id", "output.json.system_fingerprint"]
