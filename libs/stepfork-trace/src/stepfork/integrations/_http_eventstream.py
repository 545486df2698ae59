"""The AWS event-stream codec of the HTTP capture (``application/vnd.amazon.eventstream``; issue 30).

Bedrock's ``converse_stream`` and ``invoke_model_with_response_stream`` answer with binary messages (AWS
"Event Stream Encoding", the format botocore's ``botocore.eventstream`` reads)::

    total length (uint32) | headers length (uint32) | prelude CRC32 (of the 8 bytes before)
    headers: name length (uint8), name (UTF-8), value type (uint8), value
    payload | message CRC32 (of everything before it)

all big-endian. :class:`EventStreamParser` turns the bytes into recorded events as they arrive
(recording); :func:`encode_events` turns them back into messages, CRCs computed again (replay). A recorded
event is ``{"headers": {name: value}, "json" | "text" | "base64": payload}``: a string header is its
string, any other type ``{"type": "bool" | "byte" | "short" | "int" | "long" | "bytes" | "timestamp" |
"uuid", "value": ...}`` (bytes and uuid as base64, a timestamp in milliseconds); the payload is decoded as
a JSON body is (:func:`stepfork.integrations._http_json.decode_body`, by the event's ``:content-type``).

Kept apart from the SSE codec (:mod:`stepfork.integrations._http_sse`): another wire format of one body
type, with the same parser interface. Pure data, no botocore import.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from stepfork.integrations._http_json import decode_body, encode_body

__all__ = ["EventStreamParser", "encode_event", "encode_events"]

_PRELUDE = 12
_MAX_MESSAGE = 24 * 1024 * 1024  # botocore refuses larger messages; so does the parser (a corrupt length)
_FIXED = {
    2: ("byte", ">b", 1),
    3: ("short", ">h", 2),
    4: ("int", ">i", 4),
    5: ("long", ">q", 8),
    8: ("timestamp", ">q", 8),
}
_CODES = {name: (code, fmt) for code, (name, fmt, _) in _FIXED.items()}


class EventStreamParser:
    """Incremental AWS event-stream parser: feed bytes, get recorded events (module docstring). A message
    whose CRC does not hold, or whose length is impossible, is recorded as ``{"invalid": base64}`` of
    everything from it on, and nothing after it is parsed (botocore raises on it; the replay serves the
    same bytes)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._broken = False

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Parse ``chunk``; return the events it completed."""
        if self._broken:
            return []
        buffer = self._buffer + chunk
        events: list[dict[str, Any]] = []
        while len(buffer) >= _PRELUDE:
            total, header_length, prelude_crc = struct.unpack(">III", buffer[:_PRELUDE])
            sane = _PRELUDE + 4 <= total <= _MAX_MESSAGE and header_length <= total - _PRELUDE - 4
            if not sane or zlib.crc32(buffer[:8]) != prelude_crc:
                return self._invalid(events, buffer)
            if len(buffer) < total:
                break
            message, buffer = buffer[:total], buffer[total:]
            if zlib.crc32(message[:-4]) != struct.unpack(">I", message[-4:])[0]:
                return self._invalid(events, message + buffer)
            try:
                headers = _decode_headers(message[_PRELUDE : _PRELUDE + header_length])
            except (ValueError, struct.error, UnicodeDecodeError):
                return self._invalid(events, message + buffer)
            events.append(_event(headers, message[_PRELUDE + header_length : -4]))
        self._buffer = buffer
        return events

    def _invalid(self, events: list[dict[str, Any]], rest: bytes) -> list[dict[str, Any]]:
        self._broken = True
        self._buffer = b""
        events.append({"invalid": base64.b64encode(rest).decode("ascii")})
        return events


def _event(headers: dict[str, Any], payload: bytes) -> dict[str, Any]:
    content_type = headers.get(":content-type")
    body = decode_body(payload, content_type if isinstance(content_type, str) else None)
    event: dict[str, Any] = {"headers": headers}
    if body is not None:
        from stepfork.trace.jsonable import to_jsonable  # NaN/Infinity, big integers: tagged as elsewhere

        event.update({key: to_jsonable(value) for key, value in body.items()})
    return event


def _decode_headers(data: bytes) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    at = 0
    while at < len(data):
        size = data[at]
        name = data[at + 1 : at + 1 + size].decode("utf-8")
        at += 1 + size
        code = data[at]
        at += 1
        value: Any
        if code in (0, 1):
            value = {"type": "bool", "value": code == 0}
        elif code in _FIXED:
            kind, fmt, width = _FIXED[code]
            value = {"type": kind, "value": struct.unpack(fmt, data[at : at + width])[0]}
            at += width
        elif code in (6, 7):
            (length,) = struct.unpack(">H", data[at : at + 2])
            raw = data[at + 2 : at + 2 + length]
            at += 2 + length
            text = base64.b64encode(raw).decode("ascii")
            value = raw.decode("utf-8") if code == 7 else {"type": "bytes", "value": text}
        elif code == 9:
            value = {"type": "uuid", "value": base64.b64encode(data[at : at + 16]).decode("ascii")}
            at += 16
        else:
            raise ValueError(f"unknown event-stream header type {code}")
        headers[name] = value
    return headers


def _encode_header(name: str, value: Any) -> bytes:
    raw_name = name.encode("utf-8")
    head = struct.pack(">B", len(raw_name)) + raw_name
    if isinstance(value, str):
        data = value.encode("utf-8")
        return head + struct.pack(">BH", 7, len(data)) + data
    kind = value.get("type") if isinstance(value, Mapping) else None
    inner = value.get("value") if isinstance(value, Mapping) else None
    if kind == "bool":
        return head + struct.pack(">B", 0 if inner else 1)
    if kind in _CODES:
        code, fmt = _CODES[str(kind)]
        return head + struct.pack(">B", code) + struct.pack(fmt, int(inner))  # type: ignore[arg-type]
    if kind == "bytes":
        data = base64.b64decode(str(inner))
        return head + struct.pack(">BH", 6, len(data)) + data
    if kind == "uuid":
        return head + struct.pack(">B", 9) + base64.b64decode(str(inner))
    data = str(value).encode("utf-8")
    return head + struct.pack(">BH", 7, len(data)) + data


def encode_event(event: Mapping[str, Any]) -> bytes:
    """The bytes of one recorded event: one message with its CRCs (an ``invalid`` event: its bytes)."""
    if "invalid" in event:
        return base64.b64decode(str(event["invalid"]))
    given = event.get("headers")
    headers: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    header_bytes = b"".join(_encode_header(str(k), v) for k, v in headers.items())
    from stepfork.trace.jsonable import from_jsonable

    body = {key: from_jsonable(event[key]) for key in ("json", "text", "base64") if key in event}
    payload = encode_body(body)
    total = _PRELUDE + len(header_bytes) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_bytes))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + header_bytes + payload
    return message + struct.pack(">I", zlib.crc32(message))


def encode_events(events: Iterable[Any]) -> bytes:
    """The bytes of recorded events, in order (one that is not a dict is skipped)."""
    return b"".join(encode_event(e) for e in events if isinstance(e, dict))
