"""The SSE codec and the exchange forms of the HTTP capture (issue 11): property and unit tests."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stepfork.integrations._http_exchange import (
    answer_headers,
    answer_headers_lowered,
    body_input,
    events_usage,
    provider_for,
    request_input,
    response_headers,
)
from stepfork.integrations._http_sse import SSEParser, encode_event

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
names = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=":"), min_size=1, max_size=12
)
events = st.lists(
    st.fixed_dictionaries({"data": json_values}, optional={"event": names, "id": names}),
    max_size=8,
)


@given(events, st.lists(st.integers(1, 50), max_size=20), st.booleans())
def test_events_survive_encoding_and_any_split_into_reads(
    recorded: list[dict[str, Any]], cuts: list[int], crlf: bool
) -> None:
    data = b"".join(encode_event(e) for e in recorded)
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    parser = SSEParser()
    parsed: list[dict[str, Any]] = []
    position = 0
    for cut in cuts:
        parsed += parser.feed(data[position : position + cut])
        position += cut
    parsed += parser.feed(data[position:])
    assert parsed == recorded


def test_comments_multiline_text_and_done() -> None:
    parser = SSEParser()
    got = parser.feed(b": keep-alive\n\nevent: x\ndata: line one\ndata: line two\n\ndata: [DONE]\n\n")
    assert got == [{"event": "x", "text": "line one\nline two"}, {"text": "[DONE]"}]
    assert encode_event(got[0]) == b"event: x\ndata: line one\ndata: line two\n\n"


def test_credentials_are_never_part_of_the_input_and_answer_headers_are() -> None:
    headers = [
        ("Authorization", "Bearer sk-live"),
        ("x-api-key", "sk-ant"),
        ("anthropic-version", "2023-06-01"),
        ("X-Stainless-Retry-Count", "0"),
    ]
    data = request_input("post", "/v1/messages", headers, b'{"model": "m"}', "application/json")
    assert data == {
        "method": "POST",
        "path": "/v1/messages",
        "headers": {"anthropic-version": "2023-06-01"},
        "body": {"model": "m"},
    }


header_names = st.sampled_from(
    [
        "Authorization",
        "x-api-key",
        "Anthropic-Version",
        "anthropic-beta",
        "OpenAI-Beta",
        "Content-Type",
        "content-type",
        "X-Stainless-Retry-Count",
        "accept",
    ]
)


@settings(deadline=None)  # the first example imports httpx2
@given(st.lists(st.tuples(header_names, st.text(st.characters(min_codepoint=32, max_codepoint=126)))))
def test_raw_header_scan_describes_the_request_as_the_text_headers_do(pairs: list[tuple[str, str]]) -> None:
    """What the capture reads from ``Headers.raw`` (one pass over bytes) is what ``request_input`` makes
    of the decoded headers, and the content type is what ``Headers.get`` joins."""
    import httpx2

    headers = httpx2.Headers(pairs)
    kept, content_type = answer_headers(headers.raw, headers.encoding)
    assert content_type == headers.get("content-type")
    # the capture's scan of the items httpx keeps (names lower-cased already) finds the same
    assert answer_headers_lowered(headers._list, headers.encoding) == (kept, content_type)
    body = b'{"model": "m"}'
    assert body_input("post", "/v1/x", kept, body, content_type) == request_input(
        "post", "/v1/x", headers.multi_items(), body, headers.get("content-type")
    )


def test_response_headers_keep_what_the_sdk_reads() -> None:
    kept = response_headers(
        [("X-Request-Id", "r1"), ("x-ratelimit-remaining-tokens", "9"), ("server", "cf"), ("set-cookie", "a")]
    )
    assert kept == {"x-request-id": "r1", "x-ratelimit-remaining-tokens": "9"}


def test_provider_table_overrides_and_defaults() -> None:
    assert provider_for("api.openai.com") == "openai"
    assert provider_for("API.ANTHROPIC.COM") == "anthropic"
    assert provider_for("myres.openai.azure.com") == "azure_openai"
    assert provider_for("gw.internal", {"gw.internal": "openai"}) == "openai"
    assert provider_for("gw.internal", default="anthropic") == "anthropic"
    assert provider_for("gw.internal") == "gw.internal"


def test_stream_usage_of_anthropic_and_openai_events() -> None:
    anthropic_events = [
        {"data": {"type": "message_start", "message": {"usage": {"input_tokens": 25, "output_tokens": 1}}}},
        {"data": {"type": "message_delta", "usage": {"output_tokens": 15}}},
    ]
    assert events_usage(anthropic_events) == {
        "prompt_tokens": 25,
        "completion_tokens": 15,
        "total_tokens": 40,
    }
    openai_events = [{"data": {"usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}}]
    assert events_usage(openai_events) == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}


def test_a_handler_without_open_call_gets_one_call_with_the_whole_response() -> None:
    import httpx2
    from fake_providers import FakeProvider

    from stepfork.integrations.httpx import instrument_httpx
    from stepfork.trace import boundary

    class Collecting:
        is_replay = False

        def __init__(self) -> None:
            self.calls: list[Any] = []

        def handle(self, call: Any, body: Any, *, orphan: bool = False) -> Any:
            result = body()
            self.calls.append((call, result))
            return result

        async def ahandle(self, call: Any, body: Any, *, orphan: bool = False) -> Any:
            raise NotImplementedError

    handler = Collecting()
    client = instrument_httpx(httpx2.Client(transport=FakeProvider().transport()))
    token = boundary.activate(handler)  # type: ignore[arg-type]
    try:
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        response = client.post("https://api.openai.com/v1/chat/completions", json=body)
    finally:
        boundary.deactivate(handler, token)  # type: ignore[arg-type]
    assert response.json()["object"] == "chat.completion"
    ((call, out),) = handler.calls
    assert (call.provider, call.model) == ("openai", "gpt-4o-mini")
    assert out.value["status"] == 200
    assert out.prompt_tokens == 82
