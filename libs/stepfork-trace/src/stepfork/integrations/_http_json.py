"""JSON bodies of HTTP exchanges, read and written exactly (CASES C2; docs/integrations.md, "HTTP capture").

orjson reads and writes a body on the hot path; the stdlib only for what orjson cannot hold: integers past
64 bits (orjson reads them as rounded floats) and NaN/Infinity (which orjson writes as ``null``). The
recorder tags such values (``to_jsonable``, docs/values.md) and replay writes them back as the provider did.
Pure data, no httpx import (:mod:`stepfork.integrations._http_exchange` describes the whole exchange).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import orjson

from stepfork.trace.plainjson import holds_float_beyond

__all__ = ["decode_body", "decode_body_exactly", "decode_json", "dumps_json", "encode_body"]

_LIMIT = 2.0**63
"""orjson holds integers in ``[-2**63, 2**64)`` exactly and reads any other as a float of at least this
magnitude, so a float this large, rare in a provider's body, sends the text to the exact reader."""
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * 19
"""A small text's check (digits become ``0``, anything else a space): an integer orjson cannot hold has
19 digits or more (``-9223372036854775809``). ``translate`` and ``in`` cost about 1.3 ns a byte, cheaper
than the per-object float scan up to a few KB (an SSE event: 0.3 us against 1.5 us), dearer beyond."""
_SMALL_TEXT = 2048


def _non_finite(value: Any) -> float:
    # the value of ``parse_constant``: NaN/Infinity/-Infinity as Python floats (to_jsonable tags them)
    return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[value])


def decode_json(content: bytes | str, *, constants: bool = True) -> tuple[Any, bool]:
    """``(value, exact)`` of JSON text; ``exact`` is True when orjson could not hold the value and the
    stdlib reader parsed it (CASES C2): integers past 64 bits (exact ``int``, where orjson gives a rounded
    float) and, when ``constants``, ``NaN``/``Infinity`` (Python ``float``; ``to_jsonable`` turns them into
    the ``float`` tagged form, docs/values.md). Such a value is not plain JSON until converted.

    orjson parses first (the hot path); the stdlib only runs for text orjson refuses or that may hold an
    integer orjson rounded: a small text holding a run of 19 digits, a larger one whose value holds a
    float of magnitude 2**63 or more (``holds_float_beyond``, per object rather than per byte: long
    prompts are few objects of many bytes). Raises ValueError when the text is not JSON (NaN/Infinity
    too, unless ``constants``).
    """
    raw = content.encode("utf-8") if isinstance(content, str) else content
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        if len(raw) <= _SMALL_TEXT:
            if _LONG_RUN not in raw.translate(_DIGITS_AS_ZERO):
                return value, False
        elif not holds_float_beyond(value, _LIMIT):
            return value, False
    text = raw.decode("utf-8")  # UnicodeDecodeError is a ValueError
    return json.loads(text, parse_constant=_non_finite if constants else _refuse_constant), True


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_body(content: bytes, content_type: str | None) -> dict[str, Any] | None:
    """``{"json": value}`` for a JSON body, ``{"text": str}`` for UTF-8 text, ``{"base64": str}`` for other
    bytes, None for an empty body. Integers are exact at any size; NaN/Infinity are Python floats (the
    recorder tags them; :func:`decode_json`)."""
    return decode_body_exactly(content, content_type)[0]


def decode_body_exactly(content: bytes, content_type: str | None) -> tuple[dict[str, Any] | None, bool]:
    """:func:`decode_body` and whether its JSON needed the exact reader (:func:`decode_json`'s ``exact``:
    the value then holds an integer past 64 bits or a non-finite float, not plain JSON until tagged)."""
    if not content:
        return None, False
    looks_json = content[:1] in (b"{", b"[") or "json" in (content_type or "")
    if looks_json:
        try:
            value, exact = decode_json(content)
            return {"json": value}, exact
        except ValueError:
            pass
    try:
        return {"text": content.decode("utf-8")}, False
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(content).decode("ascii")}, False


def dumps_json(value: Any, *, constants: bool = True) -> bytes:
    """Compact JSON bytes of a decoded body: orjson, or the stdlib for what orjson cannot write exactly:
    integers past 64 bits and, when ``constants``, NaN/Infinity, which orjson writes as ``null``
    (``NaN``/``Infinity``/``-Infinity`` instead, what the SDKs' ``json.loads`` reads back; CASES C2)."""
    try:
        data = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits (or a lone surrogate)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if constants and b"null" in data and holds_float_beyond(value, _LIMIT):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return data


def encode_body(body: Mapping[str, Any] | None) -> bytes:
    """The bytes of a body decoded by :func:`decode_body` (JSON re-serialized compactly by
    :func:`dumps_json`: exact integers, NaN/Infinity as written)."""
    if not body:
        return b""
    if "json" in body:
        return dumps_json(body["json"])
    if "text" in body:
        return str(body["text"]).encode("utf-8")
    try:
        return base64.b64decode(str(body.get("base64", "")))
    except binascii.Error:
        return b""
