"""Property tests: canonical_json is the 0.1 byte rule; loads_json never changes a value (notes 2.1)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import orjson
from hypothesis import given, settings

sys.path.insert(0, str(Path(__file__).parent))  # the shared strategies (importlib import mode)
from json_strategies import json_values, same

from stepfork.trace.canonical import canonical_json, canonical_twin, compact_json, fingerprint, loads_json


def rule(value: object, *, sort_keys: bool = True) -> bytes:
    text = json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


@settings(max_examples=300)
@given(json_values)
def test_canonical_json_equals_the_python_json_rule_byte_for_byte(value):
    expected = rule(value)
    assert canonical_json(value) == expected
    assert canonical_json(value, assume_json=True) == expected
    assert fingerprint(value) == hashlib.sha256(expected).hexdigest()


@settings(max_examples=300)
@given(json_values, json_values)
def test_canonical_twin_proves_equal_canonical_bytes_or_says_nothing(value, other):
    # replay's one-check comparison of a live input with the recorded one (stepfork.replay.matching)
    for a, b in ((value, other), (value, value), (value, json.loads(json.dumps(value)))):
        twin = canonical_twin(a, b)
        if twin is not None:
            assert twin == rule(a) == rule(b)


def test_canonical_twin_examples():
    assert canonical_twin({"b": [1, "x"], "a": None}, {"a": None, "b": [1, "x"]}) == b'{"a":null,"b":[1,"x"]}'
    assert canonical_twin({"a": 1}, {"a": 1.0}) is None  # different bytes
    assert canonical_twin({"t": 1e-05}, {"t": 1e-05}) is None  # orjson writes 1e-5: the exact rule decides
    assert canonical_twin({"n": 2**70}, {"n": 2**70}) is None  # orjson refuses it


@settings(max_examples=200)
@given(json_values)
def test_compact_json_is_the_rule_with_keys_in_insertion_order(value):
    assert compact_json(value) == rule(value, sort_keys=False)
    assert compact_json(value, assume_json=True) == rule(value, sort_keys=False)


@settings(max_examples=300)
@given(json_values)
def test_loads_json_reads_back_exactly_what_compact_and_canonical_json_wrote(value):
    assert same(loads_json(compact_json(value)), value)
    assert compact_json(loads_json(compact_json(value))) == compact_json(value)  # key order kept
    assert same(loads_json(canonical_json(value).decode("utf-8")), value)


@settings(max_examples=200)
@given(json_values)
def test_loads_json_is_exact_on_text_from_other_writers(value):
    # orjson spells small floats differently and json indents: both must read back unchanged.
    try:
        orjson_text = orjson.dumps(value)
    except orjson.JSONEncodeError:  # ints beyond 64 bits
        orjson_text = rule(value)
    assert same(loads_json(orjson_text), value)
    assert same(loads_json(json.dumps(value, indent=2, ensure_ascii=True)), value)
