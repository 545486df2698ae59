"""The HTTP response the capture transport hands back on replay (issue 11, docs/performance.md "HTTP
capture"): a stream the recording saw to its end is served whole, already in memory, as a plain body is;
a stream the recorded consumer left early stays a lazy stream that stops where the recording stopped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from fake_providers import FakeProvider

from stepfork.integrations._http_sse import encode_event
from stepfork.integrations.httpx import instrument_httpx
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import Trace, record

URL = "https://api.openai.com/v1/chat/completions"
BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def _client(transport: httpx2.BaseTransport) -> httpx2.Client:
    return instrument_httpx(httpx2.Client(transport=transport))


def _recorded_sse(bundle: Path) -> dict:
    (output,) = [e.output for e in Trace.load(bundle).events if e.type == "llm_response"]
    assert isinstance(output, dict)
    return output


def test_a_finished_stream_is_served_whole_with_the_recorded_bytes(bundle: Path) -> None:
    with record("sse", output=bundle):
        live = _client(FakeProvider().transport()).post(URL, json=BODY).content
    output = _recorded_sse(bundle)
    assert output["sse"]["end"] == "finished"

    client = _client(FakeProvider().seal().transport())
    with ReplaySession.from_trace(bundle):
        response = client.send(client.build_request("POST", URL, json=BODY), stream=True)
    # in memory before anything reads it (an unread network stream raises ResponseNotRead here)
    body = response.content
    assert body == b"".join(encode_event(e) for e in output["sse"]["events"])
    assert body.replace(b" ", b"") == live.replace(b" ", b"")  # the same events (JSON spacing aside)
    assert b"".join(response.iter_raw()) == body  # raw reads still work on the served body
    # the recorded headers as recorded: no Content-Length is made up for a stream
    assert "content-length" not in response.headers
    assert response.headers["content-type"].startswith("text/event-stream")


def _chunked_stream(request: httpx2.Request) -> httpx2.Response:
    """An SSE body arriving in three network reads (a generator: not read before the consumer reads)."""

    def body() -> Iterator[bytes]:
        for i in range(2):
            yield encode_event({"data": {"object": "chat.completion.chunk", "n": i}})
        yield b"data: [DONE]\n\n"

    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())


def test_a_stream_the_consumer_left_early_stays_lazy_and_stops_where_it_stopped(bundle: Path) -> None:
    client = _client(httpx2.MockTransport(_chunked_stream))
    with record("sse", output=bundle), client.stream("POST", URL, json=BODY) as response:
        first = next(response.iter_raw())  # one event, then the consumer gives up
    sse = _recorded_sse(bundle)["sse"]
    assert (sse["end"], sse["event_count"]) == ("consumer_closed", 1)

    client = _client(FakeProvider().seal().transport())
    with ReplaySession.from_trace(bundle):
        response = client.send(client.build_request("POST", URL, json=BODY), stream=True)
        with pytest.raises(httpx2.ResponseNotRead):
            response.content  # noqa: B018 - a lazy stream, not a body in memory
        chunks = response.iter_raw()
        assert next(chunks) == first
        with pytest.raises(ReplayMismatchError) as info:
            next(chunks)  # reading past the point where the recorded consumer stopped
    assert info.value.code == "stream_exhausted"


CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "temperature": 1e-05}


def _recorded_chat(bundle: Path) -> Trace:
    with record("chat", output=bundle):
        _client(FakeProvider().transport()).post(URL, json=CHAT)
    return Trace.load(bundle)


def test_a_request_with_a_float_orjson_writes_otherwise_still_matches(bundle: Path) -> None:
    # 1e-05: orjson writes "1e-5", the canonical rule "1e-05"; the match takes the exact rule
    trace = _recorded_chat(bundle)
    with ReplaySession.from_trace(trace) as session:
        response = _client(FakeProvider().seal().transport()).post(URL, json=CHAT)
    assert response.json()["object"] == "chat.completion"
    session.verify_complete()


@pytest.mark.parametrize("payload", ["input", "output"])
def test_a_recorded_payload_changed_after_hashing_is_refused_even_when_the_request_matches_it(
    bundle: Path, payload: str
) -> None:
    trace = _recorded_chat(bundle)
    kind = "llm_request" if payload == "input" else "llm_response"
    (event,) = [e for e in trace.events if e.type == kind]
    altered = {**CHAT, "messages": [{"role": "user", "content": "hello"}]}
    if payload == "input":
        event.input["body"] = altered  # the live request below is exactly this; its stored hash is not
    else:
        event.output["json"]["model"] = "gpt-4o"
    client = _client(FakeProvider().seal().transport())
    with ReplaySession.from_trace(trace), pytest.raises(ReplayMismatchError) as info:
        client.post(URL, json=altered if payload == "input" else CHAT)
    assert info.value.code == f"invalid_{payload}_fingerprint"
