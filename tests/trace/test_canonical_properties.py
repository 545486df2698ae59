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

from stepfork.trace.canonical import (
    canonical_json,
    canonical_of_fingerprint,
    canonical_twin,
    compact_json,
    fingerprint,
    loads_json,
)


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


@settings(max_examples=300)
@given(json_values, json_values)
def test_a_fingerprint_proves_canonical_bytes_without_a_float_check_or_says_nothing(value, other):
    # replay's check of stored fingerprints (stepfork.replay.matching): orjson's bytes count only when they
    # hash to the fingerprint of the exact rule's bytes
    for a, b in ((value, other), (value, value), (value, json.loads(json.dumps(value)))):
        stored = hashlib.sha256(rule(b)).hexdigest()
        twin = canonical_twin(a, b, stored)
        if twin is not None:
            assert twin == rule(a) == rule(b)
        if rule(a) == rule(b) and twin is None:  # only orjson's own limits leave it unproven
            assert orjson_differs(a)
        assert canonical_twin(a, b, "0" * 64) is None  # a fingerprint nothing hashes to proves nothing
    proven = canonical_of_fingerprint(value, hashlib.sha256(rule(value)).hexdigest())
    assert proven is None or proven == rule(value)
    assert (proven is None) == orjson_differs(value)
    assert canonical_of_fingerprint(value, hashlib.sha256(rule(value) + b" ").hexdigest()) is None


def orjson_differs(value: object) -> bool:
    """True when orjson's sorted encoding is not the exact rule's (some floats) or orjson refuses it."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS) != rule(value)
    except orjson.JSONEncodeError:
        return True


def test_a_fingerprint_decides_where_the_byte_rule_alone_cannot():
    stored = fingerprint({"t": 1e-05})  # orjson writes 1e-5, the rule 1e-05: its bytes do not hash to it
    assert canonical_twin({"t": 1e-05}, {"t": 1e-05}, stored) is None
    assert canonical_of_fingerprint({"t": 1e-05}, stored) is None
    stored = fingerprint({"t": 0.5, "a": [1, "x"]})
    proven = canonical_twin({"a": [1, "x"], "t": 0.5}, {"t": 0.5, "a": [1, "x"]}, stored)
    assert proven == b'{"a":[1,"x"],"t":0.5}'
    assert canonical_of_fingerprint({"t": 0.5, "a": [1, "x"]}, stored) == b'{"a":[1,"x"],"t":0.5}'
    assert canonical_twin({"a": [1, "x"], "t": 0.5}, {"a": [1, "x"], "t": 0.25}, stored) is None


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
