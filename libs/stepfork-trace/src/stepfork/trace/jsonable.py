"""Python values <-> JSON with the tagged forms of docs/architecture.md ("Tagged forms"), in one walk.

``to_jsonable`` leaves JSON values as they are (ints of any size included) and turns every other supported
value into one tagged object ``{"$stepfork": KIND, "value": JSON, ...}``; ``from_jsonable`` reverses the
tags and, given a type annotation, validates the result into that type with pydantic (CASES C2, C3, C4).
Nothing read from a bundle is ever imported: ``enum``, ``dataclass`` and ``model`` tags decode to their
JSON value unless an annotation names the class.

Containers are rebuilt only when a child changes, so plain JSON comes back as the very same object. A
value that is plain JSON already skips the walk: :mod:`stepfork.trace.plainjson` proves it in one scan
(``MAX_DEPTH``, ``TAG``, ``PlainFacts`` and ``take_plain_facts`` live there and are re-exported here).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import functools
import inspect
import math
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from stepfork.trace.canonical import canonical_json, json_path_child
from stepfork.trace.errors import TraceSerializationError
from stepfork.trace.plainjson import MAX_DEPTH, TAG, PlainFacts, remember_plain, take_plain_facts

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import TypeAdapter

__all__ = [
    "MAX_DEPTH",
    "TAG",
    "PlainFacts",
    "Serializer",
    "from_jsonable",
    "take_plain_facts",
    "to_json_value",
    "to_jsonable",
]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_NON_FINITE: Final = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class _Fail(Exception):
    """Internal: carries the reason up the walk; each level adds its key (paths cost nothing on success)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.keys: list[str | int] = []


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _type_label(cls: type) -> str:
    """The informational ``"type"`` of an enum/dataclass/model tag: ``cls.__qualname__``, no module.

    The tag is part of the hashed payload, and a module name depends on how the program was started
    (``__main__.Report`` under ``python agent.py``, ``agent.Report`` when imported), so it would make a
    replay diverge for no reason (docs/values.md "Tagged forms").
    """
    return cls.__qualname__


def _tag(kind: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {TAG: kind, "value": value, **extra}


def _child(value: Any, key: str | int, depth: int, active: set[int]) -> Any:
    try:
        return _conv(value, depth, active)
    except _Fail as exc:
        exc.keys.append(key)
        raise


def _conv_str(s: str) -> Any:
    if s.isascii() or not _SURROGATE.search(s):
        return s
    return _tag("str", base64.b64encode(s.encode("utf-8", "surrogatepass")).decode("ascii"))


def _conv_dict(value: dict[Any, Any], depth: int, active: set[int]) -> Any:
    plain = True
    for k in value:
        if type(k) is not str or k == TAG or (not k.isascii() and _SURROGATE.search(k)):
            plain = False
            break
    if not plain:  # the pairs form keeps non-str keys, "$stepfork" keys and keys with lone surrogates
        pairs = [
            [_child(k, f"<key {i}>", depth, active), _child(v, i, depth, active)]
            for i, (k, v) in enumerate(value.items())
        ]
        return _tag("dict", pairs)
    out: dict[str, Any] | None = None
    for k, v in value.items():
        tv = type(v)
        # JSON leaves inline (no call): the common case of the hot path. ``v - v == 0.0``: finite float.
        if (
            (tv is str and (v.isascii() or not _SURROGATE.search(v)))
            or tv is int
            or tv is bool
            or v is None
            or (tv is float and v - v == 0.0)
        ):
            c = v
        else:
            c = _child(v, k, depth, active)
        if out is None:
            if c is v:
                continue
            out = {}
            for k2, v2 in value.items():  # copy the unchanged prefix
                if k2 == k:
                    break
                out[k2] = v2
        out[k] = c
    if out is None:
        return value if type(value) is dict else dict(value)
    return out


def _conv_list(value: Any, depth: int, active: set[int], force_copy: bool) -> list[Any]:
    out: list[Any] | None = list(value) if force_copy else None
    for i, v in enumerate(value):
        tv = type(v)
        if (
            (tv is str and (v.isascii() or not _SURROGATE.search(v)))
            or tv is int
            or tv is bool
            or v is None
            or (tv is float and v - v == 0.0)
        ):
            continue
        c = _child(v, i, depth, active)
        if c is not v:
            if out is None:
                out = list(value)
            out[i] = c
    return value if out is None else out


def _conv(value: Any, depth: int, active: set[int]) -> Any:
    t = type(value)
    if t is str:
        return _conv_str(value)
    if t is int or t is bool or value is None:
        return value
    if t is float:
        if math.isfinite(value):
            return value
        return _tag("float", "nan" if value != value else ("inf" if value > 0 else "-inf"))
    if depth >= MAX_DEPTH:
        raise _Fail(f"nesting depth over MAX_DEPTH={MAX_DEPTH}", "too_deep")
    if isinstance(value, enum.Enum):  # before int/str: IntEnum and StrEnum members keep their class
        return _tag("enum", _child(value.value, "value", depth + 1, active), type=_type_label(t))
    if isinstance(value, (dict, list, tuple, set, frozenset)) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        ident = id(value)
        if ident in active:
            raise _Fail(f"cycle: this {t.__name__} contains itself", "cycle")
        active.add(ident)
        try:
            return _conv_container(value, t, depth + 1, active)
        finally:
            active.discard(ident)
    if isinstance(value, (bytes, bytearray)):
        return _tag("bytes", base64.b64encode(value).decode("ascii"))
    if isinstance(value, dt.datetime):
        return _tag("datetime", value.isoformat())
    if isinstance(value, dt.date):
        return _tag("date", value.isoformat())
    if isinstance(value, dt.time):
        return _tag("time", value.isoformat())
    if isinstance(value, dt.timedelta):
        return _tag("timedelta", [value.days, value.seconds, value.microseconds])
    if isinstance(value, Decimal):
        return _tag("decimal", str(value))
    if isinstance(value, uuid.UUID):
        return _tag("uuid", str(value))
    if isinstance(value, str):  # a str subclass that is not an Enum: its text
        return _conv_str(str.__str__(value))
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _conv(float(value), depth, active)
    if getattr(t, "__pydantic_fields__", None) is not None and hasattr(value, "model_dump"):
        ident = id(value)
        if ident in active:
            raise _Fail(f"cycle: this {t.__name__} contains itself", "cycle")
        active.add(ident)
        try:
            dumped = value.model_dump(mode="python")
            return _tag("model", _child(dumped, "value", depth + 1, active), type=_type_label(t))
        finally:
            active.discard(ident)
    serializer = _serializer.get()
    if serializer is not None:
        return _serialized(serializer, value, t, depth, active)
    raise _Fail(
        f"cannot serialize {_qualname(t)}: it has no JSON form (see docs/values.md)", "unsupported_type"
    )


def _serialized(serializer: Serializer, value: Any, t: type, depth: int, active: set[int]) -> Any:
    """The user's ``serializer`` applied to a value without a JSON form of its own, then converted."""
    try:
        converted = serializer(value)
    except Exception as exc:
        message = f"cannot serialize {t.__name__}: the serializer raised {exc!r}"
        raise _Fail(message, "unsupported_type") from None
    if converted is value:
        raise _Fail(f"cannot serialize {t.__name__}: the serializer returned it unchanged", "unchanged")
    return _conv(converted, depth + 1, active)


def _conv_container(value: Any, t: type, depth: int, active: set[int]) -> Any:
    if isinstance(value, dict):
        return _conv_dict(value, depth, active)
    if isinstance(value, list):
        return _conv_list(value, depth, active, force_copy=t is not list)
    if isinstance(value, tuple):
        return _tag("tuple", _conv_list(value, depth, active, force_copy=True))
    if isinstance(value, (set, frozenset)):
        members = [_child(m, i, depth, active) for i, m in enumerate(value)]
        members.sort(key=lambda m: canonical_json(m, assume_json=True))
        return _tag("frozenset" if isinstance(value, frozenset) else "set", members)
    fields = {
        f.name: _child(getattr(value, f.name), f.name, depth, active) for f in dataclasses.fields(value)
    }
    return _tag("dataclass", fields, type=_type_label(t))


Serializer = Callable[[Any], Any]
"""A callable turning one value into something JSON can hold (REFERENCE-API.md ``Serializer``)."""

_serializer: ContextVar[Serializer | None] = ContextVar("stepfork_serializer", default=None)


def to_json_value(
    value: Any, *, serializer: Serializer | None = None, path: str = "$", depth: int = 0
) -> Any:
    """The reference's name for :func:`to_jsonable` (REFERENCE-API.md ``to_json_value``); ``depth`` is
    accepted for compatibility and ignored (the walk counts from ``value``). Differences from the reference
    (docs/decisions.md): tuples and other values with a tagged form keep it, and ``serializer`` is tried
    only on values that have none. Raises TraceSerializationError (a TypeError) as :func:`to_jsonable`."""
    del depth
    return to_jsonable(value, path=path, serializer=serializer)


def to_jsonable(value: Any, *, path: str = "$", serializer: Serializer | None = None) -> Any:
    """Turn a Python value into JSON, tagging what JSON cannot hold (docs/architecture.md "Tagged forms").

    Args:
        value: any nesting of JSON values, bytes, datetime/date/time/timedelta, Decimal, UUID, Enum,
            set/frozenset, tuple, dataclass instances and pydantic models.
        path: the JSONPath of ``value`` inside a larger document, used in error paths.

    Returns:
        a JSON value (exact dict/list/str/int/float/bool/None, finite floats) accepted by canonical_json;
        ``value`` itself when it already is such JSON.

        serializer: called on a value that has no JSON form of its own (an arbitrary class); its result
            is converted in turn (REFERENCE-API.md ``serializer=``).

    Raises:
        TraceSerializationError: ``code`` is ``cycle``, ``unsupported_type``, ``unchanged`` (the serializer
            returned its argument) or ``too_deep`` (nesting deeper than MAX_DEPTH); ``path`` names the value
            (``$.a[0].b``; ``<key i>`` marks a dict key).
    """
    kind = type(value)
    if value is None or kind is int or kind is bool:  # a tool returning nothing, a count, a flag
        return value
    if remember_plain(value):  # plain JSON: returned as is, its facts kept for the recorder
        return value
    token = _serializer.set(serializer) if serializer is not None else None
    try:
        return _conv(value, 0, set())
    except _Fail as exc:
        where = path
        for key in reversed(exc.keys):
            where = json_path_child(where, key) if not str(key).startswith("<key ") else f"{where}{key}"
        raise TraceSerializationError(f"{exc.message} at {where}", path=where, code=exc.code) from None
    except RecursionError:
        raise TraceSerializationError("nesting too deep", path=path, code="too_deep") from None
    finally:
        if token is not None:
            _serializer.reset(token)


# ---------------------------------------------------------------------------------------------- decoding


def _bad_tag(message: str) -> _Fail:
    return _Fail(message, "invalid_tag")


def _expect(value: Any, kind: type, tag: str) -> Any:
    if type(value) is not kind:
        raise _bad_tag(f"tag {tag!r} needs a {kind.__name__} value, got {type(value).__name__}")
    return value


def _decode_tag(obj: dict[str, Any]) -> Any:
    kind = obj[TAG]
    if "value" not in obj:
        raise _bad_tag("tagged object without 'value'")
    raw = obj["value"]
    try:
        if kind == "bytes":
            return base64.b64decode(_expect(raw, str, kind), validate=True)
        if kind == "datetime":
            return dt.datetime.fromisoformat(_expect(raw, str, kind))
        if kind == "date":
            return dt.date.fromisoformat(_expect(raw, str, kind))
        if kind == "time":
            return dt.time.fromisoformat(_expect(raw, str, kind))
        if kind == "timedelta":
            days, seconds, micros = _expect(raw, list, kind)
            return dt.timedelta(days=days, seconds=seconds, microseconds=micros)
        if kind == "decimal":
            return Decimal(_expect(raw, str, kind))
        if kind == "uuid":
            return uuid.UUID(_expect(raw, str, kind))
        if kind == "float":
            return _NON_FINITE[_expect(raw, str, kind)]
        if kind == "str":
            return base64.b64decode(_expect(raw, str, kind), validate=True).decode("utf-8", "surrogatepass")
        if kind in ("enum", "model", "dataclass"):
            return _child_decode(raw, "value")
        if kind in ("tuple", "set", "frozenset"):
            items = [_child_decode(v, i) for i, v in enumerate(_expect(raw, list, kind))]
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[kind](items)
        if kind == "dict":
            return {
                _child_decode(p[0], f"<key {i}>"): _child_decode(p[1], i)
                for i, p in enumerate(_expect(raw, list, kind))
            }
    except _Fail:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise _bad_tag(f"malformed {kind!r} tag: {exc}") from None
    raise _Fail(f"unknown tag {kind!r}", "unknown_tag")


def _child_decode(value: Any, key: str | int) -> Any:
    try:
        return _decode(value)
    except _Fail as exc:
        exc.keys.append(key)
        raise


def _decode(value: Any) -> Any:
    t = type(value)
    if t is dict:
        if TAG in value:
            return _decode_tag(value)
        return {k: _child_decode(v, k) for k, v in value.items()}
    if t is list:
        return [_child_decode(v, i) for i, v in enumerate(value)]
    return value


@functools.lru_cache(maxsize=512)
def _cached_adapter(annotation: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(annotation)


def _adapter(annotation: Any) -> TypeAdapter[Any]:
    try:
        return _cached_adapter(annotation)
    except TypeError:  # an unhashable annotation: build it uncached
        from pydantic import TypeAdapter

        return TypeAdapter(annotation)


def from_jsonable(value: Any, annotation: Any = None) -> Any:
    """Reverse :func:`to_jsonable`; with an annotation, validate the result into that type (CASES C4).

    Args:
        value: a JSON value, possibly holding tagged forms.
        annotation: a type pydantic can validate (a model, dataclass, Enum, ``bytes``, ``list[Booking]``,
            ``dict[str, Decimal]``...). ``None`` or ``inspect.Signature.empty``: decode only.

    Returns:
        bytes, datetime, Decimal, UUID, set, frozenset, tuple, float, str values for their tags;
        ``enum``/``dataclass``/``model`` tags become their decoded JSON value (classes named in a bundle
        are never imported); with an annotation, an instance of it (a ``Booking`` for ``-> Booking``).

    Raises:
        TraceSerializationError: ``code`` ``invalid_tag``/``unknown_tag`` for a malformed tag,
            ``annotation_mismatch`` when the value does not fit the annotation (``path`` is pydantic's first
            error location), ``annotation_unsupported`` when pydantic cannot handle the annotation.
    """
    try:
        decoded = _decode(value)
    except _Fail as exc:
        where = "$"
        for key in reversed(exc.keys):
            where = json_path_child(where, key) if not str(key).startswith("<key ") else f"{where}{key}"
        raise TraceSerializationError(f"{exc.message} at {where}", path=where, code=exc.code) from None
    if annotation is None or annotation is inspect.Signature.empty:
        return decoded
    try:
        return _adapter(annotation).validate_python(decoded)
    except Exception as exc:  # pydantic is imported here only: a per-call import costs on the hot path
        from pydantic import PydanticUserError, ValidationError

        if isinstance(exc, (PydanticUserError, TypeError, NameError)):  # schema errors: PydanticUserError
            raise TraceSerializationError(
                f"cannot validate into {annotation!r}: {exc}", path="$", code="annotation_unsupported"
            ) from None
        if not isinstance(exc, ValidationError):
            raise
        first = exc.errors()[0]
        where = "$"
        for key in first["loc"]:
            where = json_path_child(where, key)
        raise TraceSerializationError(
            f"value does not fit {annotation!r} at {where}: {first['msg']}",
            path=where,
            code="annotation_mismatch",
        ) from None
