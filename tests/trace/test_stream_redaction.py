"""Secrets split across a stream's deltas are redacted (NEWCOMER 16; docs/redaction.md, "Streams").

Property: whatever the split of a text holding a secret into chunks, in every recorded stream shape
(OpenAI Chat Completions and Responses SSE, Anthropic Messages SSE, Bedrock's event stream, the SDK
integrations' chunk lists), the redacted stream's deltas join to the text redacted as one string, the
recorder's screen (``Redactor.may_change`` with the value) sends it to the walk, and no delta keeps a
piece that joins back into the secret. The real-SDK stories are
tests/integrations/test_stream_secrets.py.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from stepfork.trace.plainjson import scan_plain
from stepfork.trace.redaction import REPLACEMENT, Redactor, redact_event

OPENAI_KEY = "sk-proj-Zq8X2mNvL4pR7tY1wK9sB3dF6gH0jA5cE8uI2oP"
REGISTERED = "acct-7781-zulu"


def chat(pieces: list[str]) -> dict[str, Any]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    events: list[dict[str, Any]] = [
        {"data": {**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}}
        for p in pieces
    ]
    events.append({"text": "[DONE]"})
    return {
        "status": 200,
        "headers": {},
        "sse": {"end": "finished", "event_count": len(events), "events": events},
    }


def responses(pieces: list[str]) -> dict[str, Any]:
    ids = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {
            "event": "response.output_text.delta",
            "data": {"type": "response.output_text.delta", **ids, "delta": p},
        }
        for p in pieces
    ]
    return {
        "status": 200,
        "headers": {},
        "sse": {"end": "finished", "event_count": len(events), "events": events},
    }


def anthropic(pieces: list[str]) -> dict[str, Any]:
    events: list[dict[str, Any]] = [
        {"event": "content_block_start", "data": {"type": "content_block_start", "index": 0,
                                                  "content_block": {"type": "text", "text": ""}}},
    ]  # fmt: skip
    events += [
        {"event": "content_block_delta",
         "data": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}}
        for p in pieces
    ]  # fmt: skip
    return {
        "status": 200,
        "headers": {},
        "sse": {"end": "finished", "event_count": len(events), "events": events},
    }


def bedrock(pieces: list[str]) -> dict[str, Any]:
    events = [
        {"headers": {":event-type": "contentBlockDelta", ":message-type": "event"},
         "json": {"contentBlockIndex": 0, "delta": {"text": p}, "p": "abcdefgh"}}
        for p in pieces
    ]  # fmt: skip
    return {"status": 200, "headers": {}, "eventstream": {"end": "finished", "event_count": len(events),
                                                          "events": events}}  # fmt: skip


def sdk_chunks(pieces: list[str]) -> dict[str, Any]:
    chunks = [{"id": "c", "choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    return {"stream": {"end": "finished", "chunk_count": len(chunks), "chunks": chunks, "error": None}}


SHAPES: dict[str, Callable[[list[str]], dict[str, Any]]] = {
    "openai_chat": chat,
    "openai_responses": responses,
    "anthropic": anthropic,
    "bedrock": bedrock,
    "sdk_chunks": sdk_chunks,
}


def joined(output: dict[str, Any]) -> str:
    """The text a reader of the stream joins (the shapes above)."""
    if "eventstream" in output:
        return "".join(e["json"]["delta"]["text"] for e in output["eventstream"]["events"])
    if "stream" in output:
        return "".join(c["choices"][0]["delta"]["content"] for c in output["stream"]["chunks"])
    texts = []
    for event in output["sse"]["events"]:
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        if "choices" in data:
            texts.append(data["choices"][0]["delta"]["content"])
        elif data["type"] == "content_block_delta":
            texts.append(data["delta"]["text"])
        elif "delta" in data:
            texts.append(data["delta"])
    return "".join(texts)


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


SECRET = st.one_of(
    st.just(OPENAI_KEY),
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", min_size=36, max_size=36).map(
        lambda s: "ghp_" + s
    ),
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=16, max_size=16).map(lambda s: "AKIA" + s),
    st.just(REGISTERED),
    st.just("https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage"),
)
WORDS = st.lists(
    st.sampled_from(["your", "key", "is", "here", "keep", "it", "safe", "ok", "the"]), max_size=6
)


@given(
    shape=st.sampled_from(sorted(SHAPES)),
    before=WORDS,
    secret=SECRET,
    after=WORDS,
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_split_of_a_text_holding_a_secret_is_redacted(
    shape: str, before: list[str], secret: str, after: list[str], cuts: list[int]
) -> None:
    rules = Redactor(secrets=[REGISTERED])
    text = " ".join([*before, secret, *after])
    output = SHAPES[shape](split(text, cuts))
    facts = scan_plain(output)
    assert facts is not None
    assert rules.may_change(facts.keys, facts.encoded, output)  # the recorder's screen sends it to the walk
    result = rules.redact(output, base_path="/output")
    assert joined(result.value) == rules.redact_text(text)
    assert secret not in joined(result.value)
    assert REPLACEMENT in joined(result.value)
    assert result.findings
    form = next(key for key in output if key in ("sse", "eventstream", "stream"))
    assert all(f.path.startswith(f"/output/{form}/") for f in result.findings)
    assert rules.redact(result.value).value == result.value  # redacting twice changes nothing


@given(
    shape=st.sampled_from(sorted(SHAPES)),
    words=st.lists(
        st.sampled_from(["sk", "-", "proj", "ghp", "_", "key", "is", " ", "token", "ok"]), max_size=20
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=10),
)
@example(shape="anthropic", words=["-", "-", "sk", "sk", "-", "sk", "sk", "proj"], cuts=[4])
def test_a_stream_without_a_secret_is_left_as_it_is(shape: str, words: list[str], cuts: list[int]) -> None:
    text = "".join(words)
    pieces = split(text, cuts)
    output = SHAPES[shape](pieces)
    rules = Redactor()
    if rules.redact_text(text) != text:
        return  # the drawn text is itself a credential shape (sk-proj-...): the first property's case
    if any(rules.redact_text(piece) != piece for piece in pieces):
        return  # a delta alone has a credential's shape: redacted as every string is (the test below)
    result = rules.redact(output)
    assert result.value is output
    assert result.findings == []


def test_a_delta_with_a_credentials_shape_on_its_own_is_redacted_though_the_join_is_not() -> None:
    # "--sksk-skskproj" holds no key (no word boundary before its "sk-"), but its second delta read alone
    # does: every string is matched on its own too (docs/redaction.md, "Streams"), since a reader of the
    # bundle's events sees each delta alone. Found by the property above (hypothesis, 2026-12-06).
    output = SHAPES["anthropic"](["--sk", "sk-skskproj"])
    result = Redactor().redact(output)
    texts = [e["data"]["delta"]["text"] for e in result.value["sse"]["events"] if e["data"].get("delta")]
    assert texts == ["--sk", REPLACEMENT]
    assert [f.reason for f in result.findings] == ["credential_pattern"]


def test_the_deltas_carrying_the_match_are_replaced_so_the_join_holds_one_marker() -> None:
    output = chat(["Your key is sk-pr", "oj-Zq8X2mNvL4pR7tY1", "wK9sB3dF6gH0jA5cE8uI2oP, keep it safe."])
    result = Redactor().redact(output, base_path="/output")
    deltas = [e["data"]["choices"][0]["delta"]["content"] for e in result.value["sse"]["events"][:3]]
    assert deltas == ["Your key is [REDACTED]", "", ", keep it safe."]
    assert [(f.path, f.reason) for f in result.findings] == [
        (f"/output/sse/events/{i}/data/choices/0/delta/content", "credential_pattern") for i in range(3)
    ]
    assert output["sse"]["events"][1]["data"]["choices"][0]["delta"]["content"] == "oj-Zq8X2mNvL4pR7tY1"


def test_separate_choices_and_blocks_are_not_joined() -> None:
    # choice 0 says "sk-pr" and choice 1 "oj-...": no reader joins them, so no secret is made of them
    first = chat(["say sk-pr"])["sse"]["events"][0]
    second = chat(["oj-Zq8X2mNvL4pR7tY1wK9"])["sse"]["events"][0]
    second["data"]["choices"][0]["index"] = 1
    output = chat([])
    output["sse"]["events"] = [first, second]
    assert Redactor().redact(output).value is output


def test_an_event_already_recorded_is_redacted_by_validation_and_redact() -> None:
    # a bundle written before this rule: validate warns (redact_event), stepfork redact rewrites
    event = {
        "id": "evt_1",
        "type": "llm_response",
        "output": anthropic(["key: sk-ant-api03-abc", "defGHIJ12345"]),
    }
    redacted, findings = redact_event(event)
    assert [f.path for f in findings] == [
        "/output/sse/events/1/data/delta/text",
        "/output/sse/events/2/data/delta/text",
    ]
    assert joined(redacted["output"]) == "key: [REDACTED]"
    assert redacted["redactions"] == [f.path for f in findings]


def test_a_stream_quoted_inside_another_value_is_redacted_too() -> None:
    # inspect --json prints the report dict, where a stream sits under timeline/N/details/output
    report = {"timeline": [{"details": {"output": chat(["sk-pr", "oj-Zq8X2mNvL4pR7tY1wK9"])}}]}
    value = Redactor().redact(report).value
    assert "Zq8X" not in orjson.dumps(value).decode()


def test_tool_arguments_split_across_deltas_are_redacted() -> None:
    def call(arguments: str) -> dict[str, Any]:
        function = {"arguments": arguments}
        delta = {"tool_calls": [{"index": 0, "function": function}]}
        return {"data": {"choices": [{"index": 0, "delta": delta}]}}

    output = chat([])
    output["sse"]["events"] = [call('{"token": "ghp_16C7e42F292c'), call('6912E7710c838347Ae178B4a"}')]
    value = Redactor().redact(output).value
    arguments = "".join(e["data"]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                        for e in value["sse"]["events"])  # fmt: skip
    assert arguments == '{"token": "[REDACTED]"}'


@pytest.mark.parametrize("encoded", [b'{"stream":true}', b'{"a":"\\"sse\\":{"}'])
def test_the_screen_ignores_a_stream_flag_and_quoted_text(encoded: bytes) -> None:
    value = orjson.loads(encoded)
    assert not Redactor().may_change(set(value), encoded)


def test_tagged_bytes_inside_a_stream_are_still_the_walks() -> None:
    # a delta is text; tagged bytes are decoded and scanned whole by the walk, after the stream rule
    tagged = {"$stepfork": "bytes", "value": base64.b64encode(OPENAI_KEY.encode()).decode()}
    output = sdk_chunks(["x"])
    output["stream"]["chunks"].append({"choices": [{"index": 0, "delta": {"content": tagged}}]})
    value = Redactor().redact(output).value
    decoded = base64.b64decode(value["stream"]["chunks"][1]["choices"][0]["delta"]["content"]["value"])
    assert decoded == REPLACEMENT.encode()
