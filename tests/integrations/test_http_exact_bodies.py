"""What the HTTP capture records of a body is exact (CASES C2) and decoded (a compressed SSE stream):
integers past 64 bits and NaN/Infinity in JSON bodies, and a gzip-encoded event stream, recorded through a
real httpx2 client on a MockTransport and replayed by a frozen ReplaySession."""

from __future__ import annotations

import asyncio
import gzip
import json
import math
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepfork.integrations._http_json import decode_body, encode_body
from stepfork.integrations._http_sse import encode_event
from stepfork.integrations.httpx import instrument_httpx
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import Trace, record

URL = "https://api.openai.com/v1/chat/completions"
BIG = 123456789012345678901234567890
NAN_TAG = {"$stepfork": "float", "value": "nan"}


def _json_client(answer: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=answer)

    return instrument_httpx(httpx2.Client(transport=httpx2.MockTransport(handler)))


def _sealed() -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("a frozen replay called the provider")

    return instrument_httpx(httpx2.Client(transport=httpx2.MockTransport(handler)))


def _post(client: httpx2.Client, body: bytes) -> httpx2.Response:
    return client.post(URL, content=body, headers={"content-type": "application/json"})


def _events(bundle: Path, kind: str) -> list[object]:
    trace = Trace.load(bundle)
    field = "input" if kind == "llm_request" else "output"
    return [getattr(e, field) for e in trace.events if e.type == kind]


# a short body and one past 2 KB (the two ways the capture looks for integers orjson would round)
@pytest.mark.parametrize("prompt", ["hi", "a long prompt " * 300])
@pytest.mark.parametrize("big", [BIG, -(2**63) - 1])
def test_an_integer_past_64_bits_replays_exactly_and_a_different_one_diverges(
    bundle: Path, prompt: str, big: int
) -> None:
    def request(seed: int) -> bytes:
        return b'{"model": "m", "prompt": "%s", "seed": %d}' % (prompt.encode(), seed)

    answer = b'{"id": %d, "object": "x", "text": "%s"}' % (big, prompt.encode())
    with record("big", output=bundle):
        live = _post(_json_client(answer), request(big)).json()
    assert live["id"] == big
    (recorded,) = _events(bundle, "llm_request")
    assert recorded["body"]["seed"] == big  # type: ignore[index]
    (output,) = _events(bundle, "llm_response")
    assert output["json"]["id"] == big  # type: ignore[index]

    with ReplaySession.from_trace(bundle):
        response = _post(_sealed(), request(big))
    assert str(big).encode() in response.content  # the served bytes carry the integer itself
    assert response.json()["id"] == big
    assert type(response.json()["id"]) is int

    with pytest.raises(ReplayMismatchError) as info, ReplaySession.from_trace(bundle):
        _post(_sealed(), request(big + 1))
    assert info.value.code == "input_diverged"
    assert "seed" in str(info.value.path)


def test_nan_in_a_body_is_recorded_tagged_and_never_matches_null(bundle: Path) -> None:
    request = b'{"model": "m", "temperature": NaN}'
    with record("nan", output=bundle):
        live = _post(_json_client(b'{"logprob": -Infinity, "score": NaN}'), request).json()
    assert live["logprob"] == -math.inf
    (recorded,) = _events(bundle, "llm_request")
    assert recorded["body"]["temperature"] == NAN_TAG  # type: ignore[index]
    assert b'"$stepfork":"float"' in (bundle / "events.jsonl").read_bytes()

    with ReplaySession.from_trace(bundle):
        replayed = _post(_sealed(), request).json()
    assert replayed["logprob"] == -math.inf
    assert math.isnan(replayed["score"])  # not None: orjson would have written null

    with pytest.raises(ReplayMismatchError) as info, ReplaySession.from_trace(bundle):
        _post(_sealed(), b'{"model": "m", "temperature": null}')
    assert info.value.code == "input_diverged"
    assert "temperature" in str(info.value.path)


def _sse_body() -> bytes:
    events = [{"data": {"object": "chat.completion.chunk", "n": i}} for i in range(15)]
    return b"".join(encode_event(e) for e in events) + b"data: [DONE]\n\n"


def test_a_gzip_encoded_event_stream_is_recorded_decoded_and_replays_the_same_lines(bundle: Path) -> None:
    compressed = gzip.compress(_sse_body())

    def handler(request: httpx2.Request) -> httpx2.Response:
        # a stream off the wire: the capture sees the compressed bytes (iter_raw), the SDK the decoded ones
        headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
        return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(compressed))

    client = instrument_httpx(httpx2.Client(transport=httpx2.MockTransport(handler)))
    with record("gzip", output=bundle), client.stream("POST", URL, json={"model": "m"}) as response:
        live = [line for line in response.iter_lines() if line]
    assert len(live) == 16
    (output,) = _events(bundle, "llm_response")
    sse = output["sse"]  # type: ignore[index]
    assert (sse["end"], sse["event_count"]) == ("finished", 16)
    assert sse["events"][3] == {"data": {"object": "chat.completion.chunk", "n": 3}}

    sealed = _sealed()
    with ReplaySession.from_trace(bundle), sealed.stream("POST", URL, json={"model": "m"}) as response:
        assert "content-encoding" not in response.headers  # decoded events, served uncompressed
        replayed = [line for line in response.iter_lines() if line]
    assert [line.replace(" ", "") for line in replayed] == [line.replace(" ", "") for line in live]


def test_an_async_client_records_a_deflate_encoded_stream_decoded(bundle: Path) -> None:
    packer = zlib.compressobj()
    compressed = packer.compress(_sse_body()) + packer.flush()

    async def handler(request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "text/event-stream", "content-encoding": "deflate"}
        return httpx2.Response(200, headers=headers, stream=_AsyncBytes(compressed))

    async def run(client: httpx2.AsyncClient) -> list[str]:
        async with client.stream("POST", URL, json={"model": "m"}) as response:
            return [line async for line in response.aiter_lines() if line]

    client = instrument_httpx(httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))
    with record("deflate", output=bundle):
        live = asyncio.run(run(client))
    (output,) = _events(bundle, "llm_response")
    assert output["sse"]["event_count"] == len(live) == 16  # type: ignore[index]

    async def sealed_handler(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("a frozen replay called the provider")

    sealed = instrument_httpx(httpx2.AsyncClient(transport=httpx2.MockTransport(sealed_handler)))
    with ReplaySession.from_trace(bundle):
        replayed = asyncio.run(run(sealed))
    assert [line.replace(" ", "") for line in replayed] == [line.replace(" ", "") for line in live]


class _AsyncBytes(httpx2.AsyncByteStream):
    """Bytes off an async wire, in two reads (not read before the consumer reads)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        half = len(self._data) // 2
        yield self._data[:half]
        yield self._data[half:]


exact_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # any size: past 64 bits orjson would round them
    | st.floats()  # NaN and the infinities included
    | st.text(max_size=24),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@given(st.dictionaries(st.text(max_size=8), exact_values, max_size=5), st.booleans())
def test_a_json_body_survives_decoding_and_encoding_exactly(value: dict[str, object], long: bool) -> None:
    if long:  # past 2 KB: the capture scans the parsed value instead of the bytes
        value = {**value, "padding": "x" * 3000}
    content = json.dumps(value).encode()  # the stdlib writes NaN/Infinity and exact integers
    body = decode_body(content, "application/json")
    assert body is not None
    assert _same(body["json"], value)
    assert _same(json.loads(encode_body(body)), value)
