"""The AWS event-stream codec (``application/vnd.amazon.eventstream``, Bedrock's streams; issue 30): what it
parses from a server's bytes, botocore reads back the same from the bytes it encodes."""

from __future__ import annotations

import base64
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

from botocore.eventstream import EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

from stepfork.integrations._http_eventstream import EventStreamParser, encode_events

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "bedrock_agent"))

from bedrock_server import event_message


def botocore_reads(data: bytes) -> list[tuple[dict[str, Any], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [(dict(message.headers), message.payload) for message in buffer]


def test_the_server_bytes_parse_in_any_chunking_and_encode_back_to_what_botocore_reads() -> None:
    data = event_message("messageStart", {"role": "assistant", "p": "abc"}) + event_message(
        "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Sunny"}, "p": "x"}
    )
    for size in (1, 7, 64, len(data)):
        parser = EventStreamParser()
        events = [e for at in range(0, len(data), size) for e in parser.feed(data[at : at + size])]
        assert [e["headers"][":event-type"] for e in events] == ["messageStart", "contentBlockDelta"]
        assert events[1]["json"] == {"contentBlockIndex": 0, "delta": {"text": "Sunny"}, "p": "x"}
    assert botocore_reads(encode_events(events)) == botocore_reads(data)


def test_a_corrupt_message_is_kept_as_its_bytes() -> None:
    good = event_message("messageStop", {"stopReason": "end_turn"})
    bad = bytearray(event_message("metadata", {"usage": {}}))
    bad[-1] ^= 0xFF  # the message CRC no longer holds
    events = EventStreamParser().feed(good + bytes(bad))
    assert events[0]["headers"][":event-type"] == "messageStop"
    assert base64.b64decode(events[1]["invalid"]) == bytes(bad)
    assert encode_events(events) == good + bytes(bad)  # served as the provider sent it


header_values = st.one_of(
    st.text(max_size=20),
    st.builds(lambda v: {"type": "bool", "value": v}, st.booleans()),
    st.builds(lambda v: {"type": "int", "value": v}, st.integers(-(2**31), 2**31 - 1)),
    st.builds(lambda v: {"type": "long", "value": v}, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: {"type": "short", "value": v}, st.integers(-(2**15), 2**15 - 1)),
    st.builds(lambda v: {"type": "byte", "value": v}, st.integers(-128, 127)),
    st.builds(lambda v: {"type": "timestamp", "value": v}, st.integers(0, 2**62)),
    st.builds(lambda v: {"type": "bytes", "value": base64.b64encode(v).decode()}, st.binary(max_size=10)),
    st.builds(
        lambda v: {"type": "uuid", "value": base64.b64encode(v).decode()}, st.binary(min_size=16, max_size=16)
    ),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=10)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.lists(
        st.tuples(st.dictionaries(st.text(min_size=1, max_size=12), header_values, max_size=4), json_values),
        max_size=4,
    )
)
def test_any_event_round_trips_and_botocore_reads_it(messages: list[tuple[dict[str, Any], Any]]) -> None:
    events = [
        {"headers": {**headers, ":content-type": "application/json"}, "json": body}
        for headers, body in messages
    ]
    data = encode_events(events)
    assert EventStreamParser().feed(data) == events
    read = botocore_reads(data)
    assert len(read) == len(events)
    for (headers, payload), event in zip(read, events, strict=True):
        assert set(headers) == set(event["headers"])
        assert payload == encode_events([{**event, "headers": {}}])[12:-4]


def test_the_prelude_and_message_crcs_are_the_formats() -> None:
    data = encode_events([{"headers": {":event-type": "messageStop"}, "json": {"stopReason": "end_turn"}}])
    total, header_length, prelude_crc = struct.unpack(">III", data[:12])
    assert total == len(data)
    assert prelude_crc == zlib.crc32(data[:8])
    assert struct.unpack(">I", data[-4:])[0] == zlib.crc32(data[:-4])
    assert header_length == len(data) - 16 - len(b'{"stopReason":"end_turn"}')
