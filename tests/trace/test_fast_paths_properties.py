"""Property tests: each fast path of the recorder agrees with the slow path it stands for (issue 31).

- the plain-JSON scan (``plainjson.scan_plain``: orjson's encoding, a type scan, the text searches for
  ``null`` and orjson's risky floats) against the tagging walk of ``to_jsonable`` and the canonical rule,
  on arbitrary values: integers past 64 bits, lone surrogates, floats below 1e-4, NaN and infinities,
  tuples, enums, ``$stepfork`` keys;
- the Rust-regex text search against Python's ``re`` on arbitrary text;
- the redaction screen with its cache of clean keys against the full redaction walk, rules added midway;
- the once-per-second timestamp against ``datetime.isoformat`` and event ids against their format.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pydantic_core  # noqa: F401 - loaded, as in a recording: the text searches use Rust
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))  # the shared strategies (importlib import mode)
from json_strategies import json_floats, json_ints, json_text, same

from stepfork.trace import jsonable, plainjson
from stepfork.trace._textsearch import TextSearch
from stepfork.trace.canonical import canonical_json
from stepfork.trace.eventlog import IdSource, UtcClock
from stepfork.trace.redaction import Redactor


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    LOW = 1


_ODD_LEAVES = st.one_of(
    st.sampled_from([float("nan"), float("inf"), float("-inf"), Colour.RED, Level.LOW, uuid.UUID(int=5)]),
    st.sampled_from(["a\ud800", "\udfff", "null", "1e-5", "0.00001", "x e-7 y", "$stepfork"]),
    st.floats(min_value=-1e-4, max_value=1e-4),  # orjson's risky band, zero and subnormals
    st.integers(min_value=2**63 - 2, max_value=2**64 + 2),
)
_LEAVES = st.one_of(st.none(), st.booleans(), json_ints, json_floats, json_text, _ODD_LEAVES)
_KEYS = st.one_of(json_text, st.sampled_from(["$stepfork", "a\ud800", "value", "null"]))
_VALUES = st.recursive(
    _LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(_KEYS, children, max_size=5),
        st.lists(children, max_size=3).map(tuple),
    ),
    max_leaves=30,
)


def _walked(value: Any) -> Any:
    """What the tagging walk alone makes of ``value`` (the scan skipped)."""
    original = jsonable.remember_plain
    jsonable.remember_plain = lambda _: False  # type: ignore[assignment]
    try:
        return jsonable.to_jsonable(value)
    finally:
        jsonable.remember_plain = original


def _keys(value: Any) -> set[str]:
    if type(value) is dict:
        return set(value).union(*map(_keys, value.values()))
    if type(value) is list:
        return set().union(*map(_keys, value))
    return set()


def _rule(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(_VALUES, max_size=4), st.dictionaries(_KEYS, _VALUES, max_size=4)))
def test_a_value_the_scan_proves_plain_is_one_the_walk_leaves_unchanged(value: Any) -> None:
    try:
        walked = _walked(value)
    except TypeError:  # the walk refuses it (no JSON form): the scan must not prove it plain
        assert plainjson.scan_plain(value) is None
        return
    facts = plainjson.scan_plain(value)
    if facts is None:
        return  # not proven plain: the walk decides, as it did before
    assert walked is value  # the walk changes nothing in a value the scan passes
    assert facts.keys == _keys(value)
    rule = _rule(value)
    if not facts.risky_floats:
        assert facts.encoded == rule  # orjson's sorted bytes are the canonical bytes
    assert canonical_json(value, assume_json=True) == rule


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(json_floats, st.floats(min_value=-1e-3, max_value=1e-3)), min_size=1, max_size=8))
def test_floats_orjson_writes_otherwise_are_always_flagged(floats: list[float]) -> None:
    facts = plainjson.scan_plain({"f": floats, "n": None})
    assert facts is not None
    if facts.encoded != _rule({"f": floats, "n": None}):
        assert facts.risky_floats


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("with_none", [True, False])
def test_a_nan_or_an_infinity_anywhere_is_never_proved_plain(bad: float, with_none: bool) -> None:
    deep = {"a": [1.5, {"b": [0.25, bad]}], "c": None if with_none else "null"}
    assert plainjson.scan_plain(deep) is None
    assert jsonable.to_jsonable(deep)["a"][1]["b"][1]["$stepfork"] == "float"


_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["0.0000", "0.000", "e-5", "e-55", "E-5", "e-", "null", "nul", "1e-7,", "é"]),
        st.text(max_size=5),
    ),
    max_size=10,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_the_rust_search_finds_what_python_re_finds(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    python = re.compile(rb"0\.0000|e-\d(?!\d)|null")
    assert plainjson._FLOAT_SCREEN(data) is (python.search(data) is not None)
    assert plainjson._FLOAT_SCREEN.fast is not None  # the Rust search answered (pydantic-core is loaded)


def test_a_text_search_falls_back_to_re_when_the_rust_pattern_does_not_search() -> None:
    # an anchored pattern does not have the search semantics: the check built with it refuses it
    search = TextSearch("^x", rb"x", "ax", "b")
    assert search(b"ax") is True
    assert search(b"b") is False
    assert search.fast == search._search_slowly  # refused: Python's re answers


_SECRET_KEYS = st.sampled_from(["api_key", "apiKey", "API-KEY", "password", "tenant_code", "Tenant-Code"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.one_of(json_text, _SECRET_KEYS), st.one_of(json_text, st.integers()), max_size=4),
        min_size=1,
        max_size=4,
    )
)
def test_the_screen_with_its_clean_key_cache_never_passes_what_the_walk_redacts(docs: list[Any]) -> None:
    rules = Redactor()
    for index, doc in enumerate(docs):
        if index == len(docs) // 2:
            rules.add_key("tenant_code")  # a rule added midway: keys cached as clean before must count
        facts = plainjson.scan_plain([doc])
        if facts is None:
            continue
        if not rules.may_change(facts.keys, facts.encoded):
            result = rules.redact([doc])
            assert result.findings == []
            assert same(result.value, [doc])


@settings(max_examples=300)
@given(st.integers(min_value=0, max_value=2**62))
def test_the_clock_writes_what_datetime_writes(ns: int) -> None:
    clock = UtcClock()
    original = time.time_ns
    time.time_ns = lambda: ns  # type: ignore[assignment]
    try:
        text = clock()
        again = clock()  # the cached second
    finally:
        time.time_ns = original
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=ns // 1000)
    assert text == again == moment.isoformat()[:-6] + "Z"


def test_event_ids_are_evt_and_32_lowercase_hex_and_unique() -> None:
    ids = IdSource()
    made = [ids() for _ in range(1000)]
    assert all(re.fullmatch(r"evt_[0-9a-f]{32}", i) for i in made)
    assert len(set(made)) == len(made)
    assert made[0][4:20] == made[-1][4:20]  # one prefix per recording, then a counter
