"""The bytes of one ``events.jsonl`` line, as the recorder writes it (DESIGN.md "Data flow").

An event line is orjson's compact text of the event dict: the 12 common fields in schema order
(REFERENCE-NOTES.md 1.3), then the type's fields in model order (notes 1.4), each payload spliced in as the
compact bytes already computed for it (recorded key order, ``canonical.compact_json``'s rule), ``cost_usd``
written by the canonical rule. :func:`line_bytes` writes a line from the whole event dict; the recorder's
hot path formats the same text into :data:`LINE` from the parts it already holds (ids, the clock's text,
payload bytes), which costs a third of building the dict and encoding it (docs/performance.md "The
tool-call hot path"). tests/trace/test_recorded_bytes_golden.py and test_recording_lines.py check that both
write the bytes of ``bundle.serialize_event``.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from stepfork.trace._format import EventType
from stepfork.trace.canonical import canonical_json, compact_json

__all__ = ["LINE", "TOOL_LINE", "enum_texts", "fields_text", "int_text", "line_bytes", "quoted"]

dumps: Final = orjson.dumps

_HEAD: Final = (
    b'{"id":%b,"run_id":%b,"parent_id":%b,"step":%d,"type":%b,"timestamp":"%b","duration_ms":%b,'
    b'"status":%b,"replay_policy":%b,"input_hash":%b,"output_hash":%b,"redactions":%b,'
)
LINE: Final = _HEAD + b"%b"
"""An event line: each ``%b`` a JSON text (the timestamp's without its quotes), the step an int, the last
``%b`` the type's fields as :func:`fields_text` ends the line."""

TOOL_LINE: Final = {
    EventType.TOOL_CALL.value: _HEAD + b'"name":%b,"input":%b}\n',
    EventType.TOOL_RESULT.value: _HEAD + b'"name":%b,"output":%b}\n',
}
"""A ``tool_call``/``tool_result`` line: :data:`LINE` whose type's fields ``{"name", "input"|"output"}`` are
the name's JSON text and the payload's line bytes (as :func:`fields_text` writes them), formatted in one
pass (the payload is copied once)."""

_QUOTED: Final = {
    text: dumps(text)
    for text in (
        *(member.value for member in EventType),
        *("ok", "error", "skipped"),
        *("frozen", "live", "manual", "forbidden", "derived"),
    )
}


def quoted(text: str) -> bytes:
    """The JSON text of ``text``: cached for the event types, statuses and replay policies.

    Raises orjson.JSONEncodeError for a str orjson refuses (a lone surrogate)."""
    known = _QUOTED.get(text)
    return known if known is not None else dumps(text)


_ENUM_TEXTS: dict[tuple[str, str, str], tuple[bytes, bytes, bytes]] = {}


def enum_texts(type_: str, status: str, replay_policy: str) -> tuple[bytes, bytes, bytes]:
    """The JSON texts of an event's type, status and replay policy (cached by the three).

    Raises orjson.JSONEncodeError for a str orjson refuses (a lone surrogate)."""
    key = (type_, status, replay_policy)
    texts = _ENUM_TEXTS.get(key)
    if texts is None:
        texts = (quoted(type_), quoted(status), quoted(replay_policy))
        if len(_ENUM_TEXTS) < 1000:  # bounded: the values come from callers
            _ENUM_TEXTS[key] = texts
    return texts


def int_text(value: int | None) -> bytes:
    """The JSON text of ``duration_ms`` (an int or None)."""
    if value is None:
        return b"null"
    return b"%d" % value if type(value) is int else dumps(value)


def fields_text(fields: dict[str, Any], payloads: dict[str, bytes]) -> memoryview | None:
    """The end of an event line: the type's ``fields`` as ``"name":...}`` and the newline, each value as
    :func:`line_bytes` writes it (``payloads`` maps a field to its line bytes); None when there are no
    fields or orjson refuses a value (:func:`line_bytes`' checked path then writes the whole line)."""
    if not fields:
        return None
    try:
        return memoryview(dumps(_spliced(fields, payloads), option=orjson.OPT_APPEND_NEWLINE))[1:]  # no "{"
    except orjson.JSONEncodeError:
        return None


def _spliced(fields: dict[str, Any], payloads: dict[str, bytes]) -> dict[str, Any]:
    """``fields`` with each payload's line bytes as an ``orjson.Fragment`` (not encoded again) and a float
    ``cost_usd`` written by the canonical rule (orjson and repr() differ on some floats, canonical.py); a
    copy when anything changes."""
    cost = fields.get("cost_usd")
    if not payloads and type(cost) is not float:
        return fields
    fields = dict(fields)
    for name, data in payloads.items():
        fields[name] = orjson.Fragment(data)
    if type(cost) is float:
        fields["cost_usd"] = orjson.Fragment(canonical_json(cost))
    return fields


def _slow_line(event: dict[str, Any], payloads: dict[str, bytes]) -> bytes:
    parts = []
    for name, value in event.items():
        data = payloads.get(name)
        parts.append(b'"' + name.encode() + b'":' + (data if data is not None else compact_json(value)))
    return b"{" + b",".join(parts) + b"}\n"


def line_bytes(event: dict[str, Any], payloads: dict[str, bytes] | None = None) -> bytes:
    """The ``events.jsonl`` line of an event dict: the same bytes as ``bundle.serialize_event``.

    ``event`` holds the 12 common fields first, then the type's fields in model order (notes 1.3);
    ``payloads`` maps field names to their already computed line bytes (compact JSON, recorded key order:
    ``canonical.compact_json``), spliced in as ``orjson.Fragment`` (not re-encoded). Every other value is
    written as ``compact_json`` writes it (``_files.event_line``): orjson writes ids, names, messages, ints
    and null with those bytes, except floats and values it refuses (big ints, lone surrogates), which go
    through ``compact_json``'s checked path.

    Raises CanonicalJsonError when a value is not plain JSON.
    """
    try:
        return orjson.dumps(_spliced(event, payloads or {}), option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return _slow_line(event, payloads or {})
