"""Canonical JSON bytes, fingerprints and exact JSON reading (schema 0.1, interop/REFERENCE-NOTES.md 2.1).

The byte rule is Python's ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
allow_nan=False)`` encoded as UTF-8 (profile ``stepfork-json-v0.1``; the name is never stored). Only plain
JSON is accepted: ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, ``float`` (finite), ``bool`` and
``None``, exact types (no subclasses, no tuples). Nothing is tagged here: Python values that are not JSON
are turned into JSON first by :func:`stepfork.trace.jsonable.to_jsonable`.

orjson is the fast path only where its bytes are identical to the rule. Measured against the rule
(tests/trace/test_canonical_properties.py), orjson differs on floats with ``1e-9 <= |x| < 1e-4`` (it writes
``0.00001`` and ``1e-7`` where Python writes ``1e-05`` and ``1e-07``), refuses ints outside
``[-2**63, 2**64)`` and lone surrogates, and writes NaN/Infinity as ``null``. So: a validating walk flags
those values and routes them to ``json.dumps``; everything else is written by orjson.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, Final

import orjson

from stepfork.trace.errors import CanonicalJsonError, TraceStorageError

__all__ = [
    "CANONICAL_JSON_PROFILE",
    "MAX_JSON_DEPTH",
    "canonical_json",
    "canonical_of_fingerprint",
    "canonical_twin",
    "compact_json",
    "fingerprint",
    "json_path_child",
    "loads_json",
    "orjson_may_differ",
]

CANONICAL_JSON_PROFILE: Final = "stepfork-json-v0.1"
MAX_JSON_DEPTH: Final = 512
"""Deepest nesting canonical_json accepts (a cycle is reported as too deep). to_jsonable stops at 200."""

_SORTED: Final = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
_INSERTION: Final = _SORTED & ~orjson.OPT_SORT_KEYS
_I64_MIN: Final = -(2**63)
_U64_MAX: Final = 2**64 - 1
# orjson and repr() agree on every float outside this magnitude band (and on 0.0).
_FLOAT_SAFE_MIN: Final = 1e-4
# Bytes orjson writes for a float in the band: "0.0000..." or a one-digit negative exponent ("1e-7").
_ORJSON_SMALL_FLOAT: Final = re.compile(rb"e-\d(?!\d)")
# The other half as a pattern too: re's literal search scans bytes about twice as fast as ``in`` here
# (an output of 1.6 KB: 0.5 us against 0.7 us; and ``b"e-" in out`` took 1.5 us, more than the regex).
_ORJSON_ZERO_RUN: Final = re.compile(rb"0\.0000")
_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_INF: Final = math.inf


def json_path_child(path: str, key: str | int) -> str:
    """The JSONPath of a child: ``$.a`` for identifier keys, ``$["a b"]`` otherwise, ``$[0]`` for indexes."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENT.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=True)}]"


def _refuse(obj: Any) -> Any:
    raise TypeError(type(obj).__name__)


class _NotJson(Exception):
    """Raised by the fast walk, which keeps no paths; the caller re-walks to name the path."""


def _risky(value: Any, depth: int) -> bool:
    """Validate ``value`` as plain JSON; True when orjson's bytes may differ from the rule.

    Raises _NotJson when the value is not plain JSON.
    """
    if depth > MAX_JSON_DEPTH:
        raise _NotJson
    risky = False
    t = type(value)
    if t is dict:
        items: Any = value.values()
        for k in value:
            if type(k) is not str:
                raise _NotJson
    elif t is list:
        items = value
    else:
        items = (value,)
    for x in items:
        tx = type(x)
        if tx is str or tx is bool or x is None:
            continue
        if tx is int:
            if x < _I64_MIN or x > _U64_MAX:
                risky = True
        elif tx is float:
            if not (_FLOAT_SAFE_MIN <= abs(x) < _INF):
                if x != x or x in (_INF, -_INF):
                    raise _NotJson
                if x != 0.0:
                    risky = True
        elif tx is dict or tx is list:
            if _risky(x, depth + 1):
                risky = True
        else:
            raise _NotJson
    return risky


def _find_problem(value: Any, path: str, depth: int) -> tuple[str, str] | None:
    """Return ``(path, reason)`` of the first value that has no canonical bytes, or None."""
    if depth > MAX_JSON_DEPTH:
        return path, f"nesting deeper than {MAX_JSON_DEPTH} (or a cycle)"
    t = type(value)
    if t is dict:
        for k, v in value.items():
            if type(k) is not str:
                return path, f"object key {k!r} of type {type(k).__name__} is not a str"
            sub = json_path_child(path, k)
            if _has_surrogate(k):
                return sub, "object key holds a lone surrogate (not UTF-8)"
            found = _find_problem(v, sub, depth + 1)
            if found:
                return found
    elif t is list:
        for i, v in enumerate(value):
            found = _find_problem(v, json_path_child(path, i), depth + 1)
            if found:
                return found
    elif t is float:
        if not math.isfinite(value):
            return path, f"{value!r} is not a JSON number"
    elif t is str:
        if _has_surrogate(value):
            return path, "string holds a lone surrogate (not UTF-8)"
    elif t is int:
        try:
            str(value)
        except ValueError:
            return path, "integer has more digits than Python's int max str digits"
    elif not (t is bool or value is None):
        return path, f"{t.__name__} is not plain JSON (convert it with to_jsonable first)"
    return None


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _json_rule(value: Any, sort_keys: bool) -> bytes:
    """The reference rule itself (slow path); CanonicalJsonError naming the path on failure."""
    try:
        text = json.dumps(
            value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        return text.encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        pass
    found = _find_problem(value, "$", 0)
    if found is None:  # pragma: no cover - _find_problem mirrors every json.dumps failure
        found = ("$", "value is not plain JSON")
    raise CanonicalJsonError(found[1], path=found[0])


def orjson_may_differ(out: bytes) -> bool:
    """False when orjson's text ``out`` of a plain-JSON value (finite floats) is the canonical rule's text,
    given its keys in the rule's order; True when it may hold a float the rule writes otherwise
    (``0.00001`` or ``1e-7`` where the rule writes ``1e-05`` and ``1e-07``), or a string holding such text
    (the caller then takes the exact rule). tests/trace/test_canonical_properties.py checks it."""
    return bool(_ORJSON_ZERO_RUN.search(out) or _ORJSON_SMALL_FLOAT.search(out))


def _encode(value: Any, option: int, assume_json: bool) -> bytes:
    if not assume_json:
        try:
            risky = _risky(value, 0)
        except (_NotJson, RecursionError):
            found = _find_problem(value, "$", 0) or ("$", "value is not plain JSON")
            raise CanonicalJsonError(found[1], path=found[0]) from None
        if risky:
            return _json_rule(value, option == _SORTED)
    try:
        out = orjson.dumps(value, option=option, default=_refuse)
    except (orjson.JSONEncodeError, TypeError):
        return _json_rule(value, option == _SORTED)
    if assume_json and orjson_may_differ(out):
        return _json_rule(value, option == _SORTED)
    return out


def canonical_json(value: Any, *, assume_json: bool = False) -> bytes:
    """The canonical bytes of a JSON value (schema 0.1 rule, notes 2.1): sorted keys, no spaces, UTF-8.

    Args:
        value: plain JSON (dict with str keys, list, str, int of any size, finite float, bool, None).
        assume_json: skip the validating walk because the caller guarantees plain JSON with finite floats
            (the output of ``to_jsonable`` or ``loads_json``). Float formatting stays exact either way.

    Returns:
        bytes equal to ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
        allow_nan=False).encode("utf-8")``.

    Raises:
        CanonicalJsonError: the value is not plain JSON (NaN/inf, tuple, set, bytes, a non-str key, a lone
            surrogate, any other type, nesting deeper than MAX_JSON_DEPTH); ``path`` names it (``$.a[0]``).
    """
    return _encode(value, _SORTED, assume_json)


def canonical_twin(value: Any, other: Any, fingerprint: str | None = None) -> bytes | None:
    """The canonical bytes of ``value`` when ``other`` has the very same ones, proven with one float check
    for both, or by ``fingerprint`` (replay compares a live input with the recorded one this way).

    Args:
        value, other: plain JSON, as :func:`canonical_json` takes with ``assume_json=True``.
        fingerprint: the stored SHA-256 (hex) of ``other``'s canonical bytes, or None. When given, bytes
            that hash to it *are* those canonical bytes (SHA-256 is collision resistant), so orjson's
            encoding needs no float check, and the result also proves the fingerprint valid for ``other``.

    Returns:
        ``canonical_json(value)``, which is also ``canonical_json(other)``; or None when orjson writes the
        two differently, refuses one, writes a float the exact rule may write otherwise (no
        ``fingerprint``) or their bytes do not hash to ``fingerprint``: None only means "not proven
        here", and the caller compares with :func:`canonical_json`. Never raises.
    """
    try:
        out = orjson.dumps(value, option=_SORTED, default=_refuse)
        twin = orjson.dumps(other, option=_SORTED, default=_refuse)
    except (orjson.JSONEncodeError, TypeError):
        return None
    if out != twin:
        return None
    if fingerprint is not None:
        return out if hashlib.sha256(out).hexdigest() == fingerprint else None
    # equal bytes hold the same floats: when the check passes for one it passes for both
    if orjson_may_differ(out):
        return None
    return out


def canonical_of_fingerprint(value: Any, fingerprint: str) -> bytes | None:
    """The canonical bytes of ``value`` when they hash to ``fingerprint`` (a stored SHA-256, hex), else
    None (never raises).

    Replay's check of a stored output fingerprint: orjson's sorted encoding differs from the exact rule
    only for some floats (``1e-05``, ``1e16``) and refuses ints past 64 bits; when it hashes to the stored
    fingerprint of the canonical bytes it *is* those bytes (SHA-256 is collision resistant), with no float
    check. None means "not proven here": hash :func:`canonical_json` to decide.
    """
    try:
        out = orjson.dumps(value, option=_SORTED, default=_refuse)
    except (orjson.JSONEncodeError, TypeError):
        return None
    return out if hashlib.sha256(out).hexdigest() == fingerprint else None


def compact_json(value: Any, *, assume_json: bool = False) -> bytes:
    """Like :func:`canonical_json` but keys keep insertion order (how event lines are written, notes 1.3).

    Returns ``json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)`` as UTF-8;
    raises CanonicalJsonError as canonical_json does.
    """
    return _encode(value, _INSERTION, assume_json)


def fingerprint(value: Any, *, assume_json: bool = False) -> str:
    """H(value): the lowercase hex SHA-256 (64 chars) of :func:`canonical_json` (notes 2.1, 2.2).

    Raises CanonicalJsonError as canonical_json does.
    """
    return hashlib.sha256(_encode(value, _SORTED, assume_json)).hexdigest()


def _invalid(message: str) -> TraceStorageError:
    return TraceStorageError(message, code="invalid_json")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _invalid(f"duplicate object key {dup!r} (ambiguous data)")
    return obj


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise _invalid(f"number {text} is out of float range")
    return number


def _constant(name: str) -> Any:
    raise _invalid(f"{name} is not JSON")


def _loads_exact(data: bytes | bytearray | memoryview | str) -> Any:
    """The slow reader: json.loads with exact ints and checks; refuses what it cannot keep."""
    try:
        if isinstance(data, str):
            text = data
            data.encode("utf-8")  # raw lone surrogates in a str
        else:
            text = bytes(data).decode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError) as exc:
        raise _invalid(f"not valid UTF-8: {exc.reason} at position {exc.start}") from None
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs, parse_float=_finite_float, parse_constant=_constant
        )
    except json.JSONDecodeError as exc:
        raise _invalid(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # int longer than the int max str digits limit
        if isinstance(exc, TraceStorageError):
            raise
        raise _invalid(str(exc)) from None
    except RecursionError:
        raise _invalid("nesting too deep") from None
    if _SURROGATE_ESCAPE.search(text):
        found = _find_problem(value, "$", 0)
        if found is not None:
            raise _invalid(f"{found[1]} at {found[0]}")
    return value


def loads_json(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON text without changing any value (DESIGN.md "hot path"; issue 2 item 3).

    Args:
        data: UTF-8 bytes or a str holding one JSON value.

    Returns:
        the value: ints exact at any size, floats as written, no NaN/Infinity.

    Raises:
        TraceStorageError(code="invalid_json"): malformed JSON, invalid UTF-8, a lone surrogate escape,
            NaN/Infinity literals, a number beyond float range (``1e400``), a duplicate object key.

    orjson parses first; its result is accepted only when orjson writes it back to the very same bytes,
    which proves no int became a float, no key was dropped and no number overflowed. Otherwise the exact
    reader (json with checks) decides.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return _loads_exact(data)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if orjson.dumps(value) == raw:
        return value
    if b"\n" in raw and orjson.dumps(value, option=orjson.OPT_INDENT_2) == raw:
        return value
    return _loads_exact(data)


canonical_json_bytes = canonical_json
"""The reference's name for :func:`canonical_json` (the same function; REFERENCE-API.md)."""

hash_json = fingerprint
"""The reference's name for :func:`fingerprint` (the same function; REFERENCE-API.md)."""
