"""The Server-Sent Events codec of the HTTP capture (WHATWG HTML, "Server-sent events"; issue 11).

:class:`SSEParser` turns the bytes of a ``text/event-stream`` body into event dicts as they arrive
(recording); :func:`encode_event` / :func:`encode_events` turn recorded events back into the bytes
(replay). An event is ``{"event"?, "data" (JSON) | "text"?, "id"?, "retry"?}``, the form the recorded
output's ``sse.events`` holds (:mod:`stepfork.integrations._http_exchange` describes the whole output).

Kept apart from the exchange's forms: this is the wire format of one body type, as
:mod:`stepfork.integrations._http_json` is for JSON bodies. Pure data, no httpx import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stepfork.integrations._http_json import decode_json, dumps_json


class SSEParser:
    """Incremental Server-Sent Events parser (WHATWG HTML, "Parsing an event stream"): feed bytes, get
    event dicts ``{"event"?, "data" (JSON) | "text"?, "id"?, "retry"?}``; comments are dropped."""

    def __init__(self) -> None:
        self._buffer = b""
        self._fields: dict[str, Any] = {}
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Parse ``chunk``; return the events it completed (an event is complete at its blank line)."""
        buffer = self._buffer + chunk
        if b"\r" in buffer:  # CRLF and lone CR line ends become LF; a final CR may be half a CRLF
            held = buffer.endswith(b"\r")
            buffer = (buffer[:-1] if held else buffer).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if held:
                buffer += b"\r"
        blocks = buffer.split(b"\n\n")
        self._buffer = blocks.pop()
        events: list[dict[str, Any]] = []
        for block in blocks:
            for line in block.split(b"\n"):
                self._line(line.decode("utf-8", errors="replace"))
            event = self._dispatch()
            if event is not None:
                events.append(event)
        return events

    def _line(self, text: str) -> None:
        if text == "" or text.startswith(":"):
            return None
        name, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name in ("event", "id"):
            self._fields[name] = value
        elif name == "retry" and value.isdigit():
            self._fields["retry"] = int(value)

    def _dispatch(self) -> dict[str, Any] | None:
        if not self._fields and not self._data:
            return None
        event: dict[str, Any] = dict(self._fields)
        if self._data:
            text = "\n".join(self._data)
            try:  # NaN/Infinity stay text: the event is recorded as the provider wrote it
                event["data"] = decode_json(text, constants=False)[0]
            except ValueError:
                event["text"] = text
        self._fields, self._data = {}, []
        return event


def encode_event(event: Mapping[str, Any]) -> bytes:
    """The SSE bytes of one recorded event (one ``data:`` line per line of text)."""
    data = event.get("data", _NO_DATA)
    if data is not _NO_DATA and len(event) <= 2:  # most events: a JSON data line and maybe a name
        line = b"data: " + dumps_json(data, constants=False) + b"\n\n"  # JSON text: no line break
        if len(event) == 1:
            return line
        name = event.get("event")
        if type(name) is str:
            return b"event: " + name.encode("utf-8") + b"\n" + line
    lines: list[str] = []
    if "event" in event:
        lines.append(f"event: {event['event']}")
    if "id" in event:
        lines.append(f"id: {event['id']}")
    if "retry" in event:
        lines.append(f"retry: {event['retry']}")
    if "data" in event:
        lines.append("data: " + dumps_json(event["data"], constants=False).decode("utf-8"))
    elif "text" in event:
        lines.extend(f"data: {part}" for part in str(event["text"]).split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


_NO_DATA: Any = object()


def encode_events(events: Iterable[Any]) -> bytes:
    """The SSE bytes of recorded events, in order (an event that is not a dict is sent as text)."""
    return b"".join(encode_event(e if isinstance(e, dict) else {"text": str(e)}) for e in events)
