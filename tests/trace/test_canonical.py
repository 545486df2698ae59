"""canonical_json / fingerprint / compact_json / loads_json on the cases the byte rule names (notes 2.1)."""

from __future__ import annotations

import enum
import hashlib
import uuid

import pytest

from stepfork.trace.canonical import (
    CANONICAL_JSON_PROFILE,
    canonical_json,
    compact_json,
    fingerprint,
    loads_json,
)
from stepfork.trace.errors import CanonicalJsonError, TraceStorageError


class Color(enum.IntEnum):
    RED = 1


class Label(str):
    pass


def test_profile_name_is_the_schema_0_1_name():
    assert CANONICAL_JSON_PROFILE == "stepfork-json-v0.1"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1e-05, b"1e-05"),
        (1e-07, b"1e-07"),
        (0.0001, b"0.0001"),
        (1e16, b"1e+16"),
        (0.61, b"0.61"),
        (1.0, b"1.0"),
        (1, b"1"),
        (2**70, b"1180591620717411303424"),
        (-(2**64) - 1, b"-18446744073709551617"),
        ("\u2028\U0001f600\x7f", '"\u2028\U0001f600\x7f"'.encode()),
        ("\x00\x1f\n\t\b\f\r", b'"\\u0000\\u001f\\n\\t\\b\\f\\r"'),
        ({"b": 1, "a": [True, None]}, b'{"a":[true,null],"b":1}'),
        ({"\u00e9": 1, "z": 2, "\U0001f600": 3}, '{"z":2,"\u00e9":1,"\U0001f600":3}'.encode()),
    ],
)
def test_canonical_json_writes_the_python_rule_bytes(value, expected):
    assert canonical_json(value) == expected


def test_one_and_one_point_zero_hash_differently():
    assert fingerprint(1) != fingerprint(1.0)
    assert fingerprint({"a": 1}) == hashlib.sha256(b'{"a":1}').hexdigest()


def test_compact_json_keeps_insertion_order_and_the_same_encoding():
    assert compact_json({"b": 1e-05, "a": "\u2028"}) == '{"b":1e-05,"a":"\u2028"}'.encode()


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"a": [1, float("nan")]}, "$.a[1]"),
        ({"a": {"b": float("inf")}}, "$.a.b"),
        ([(1, 2)], "$[0]"),
        ({"x y": {1, 2}}, '$["x y"]'),
        ({"k": b"raw"}, "$.k"),
        ({"k": {1: "int key"}}, "$.k"),
        ({"s": "lone \ud800"}, "$.s"),
        ({"e": Color.RED}, "$.e"),
        ({"u": uuid.UUID(int=1)}, "$.u"),
        ({"l": Label("subclass")}, "$.l"),
    ],
)
def test_values_that_are_not_plain_json_raise_naming_the_path(value, path):
    with pytest.raises(CanonicalJsonError) as info:
        canonical_json(value)
    assert info.value.path == path
    assert info.value.code == "not_canonical_json"


def test_a_cycle_is_refused_as_too_deep_instead_of_recursing_forever():
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(CanonicalJsonError) as info:
        canonical_json(loop)
    assert info.value.path.startswith("$[0][0][0]")


def test_an_int_longer_than_python_can_print_is_refused_not_truncated():
    with pytest.raises(CanonicalJsonError) as info:
        canonical_json({"n": 10**5000})
    assert info.value.path == "$.n"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (b"18446744073709551616", 2**64),
        (b'{"id":1180591620717411303424}', {"id": 2**70}),
        (b"[-9223372036854775809]", [-(2**63) - 1]),
        (b"1e-05", 1e-05),
        (b"0.00001", 1e-05),
        (b'"\\ud83d\\ude00"', "\U0001f600"),
        ('{"a": 1.0}\n', {"a": 1.0}),
        (b'{\n  "a": [\n    1\n  ]\n}\n', {"a": [1]}),
    ],
)
def test_loads_json_keeps_every_value_exact(text, value):
    loaded = loads_json(text)
    assert loaded == value
    assert canonical_json(loaded) == canonical_json(value)


@pytest.mark.parametrize(
    "text",
    [
        b"1e400",
        b"[-1e400]",
        b"NaN",
        b'{"a":Infinity}',
        b"-Infinity",
        b'{"a":1,"a":2}',
        b'[{"k":{"x":1,"x":1}}]',
        b'"\\ud800"',
        b'{"\\udc00":1}',
        b'"\xff"',
        '"raw \ud800"',
        b"[1,]",
        b"",
        b'{"a":1} trailing',
        b'"' + b"1" * 10 + b'"' + b"1" * 5000,
        b"1" * 5000,
    ],
)
def test_loads_json_refuses_what_it_cannot_keep_with_invalid_json(text):
    with pytest.raises(TraceStorageError) as info:
        loads_json(text)
    assert info.value.code == "invalid_json"


def test_loads_json_big_int_is_an_int_not_the_float_orjson_would_give():
    loaded = loads_json(b"[1180591620717411303424]")
    assert type(loaded[0]) is int


def test_loads_json_accepts_bytearray_and_memoryview():
    assert loads_json(bytearray(b'{"a":[1,2]}')) == {"a": [1, 2]}
    assert loads_json(memoryview(b"[18446744073709551616]")) == [2**64]
