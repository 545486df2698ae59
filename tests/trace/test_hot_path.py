"""The recorder's one-pass hot path: the plain-JSON scan, its facts, redaction over the canonical bytes.

DESIGN.md "Data flow": to_jsonable returns plain JSON as is after one scan whose facts (dict keys, the
sorted orjson bytes) serve redaction and fingerprinting; anything the scan cannot prove plain takes the
tagging walk, with the same result as before.
"""

from __future__ import annotations

import enum
import gc
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))  # the shared strategies (importlib import mode)
from json_strategies import all_keys, json_values

from stepfork.trace import Trace, record, trace_tool
from stepfork.trace._redaction_rules import SCREEN_NEEDLES
from stepfork.trace.canonical import canonical_json, loads_json
from stepfork.trace.errors import TraceSerializationError
from stepfork.trace.jsonable import MAX_DEPTH, TAG, take_plain_facts, to_jsonable
from stepfork.trace.redaction import REPLACEMENT, Redactor


class Level(enum.IntEnum):
    LOW = 1


class Colour(enum.StrEnum):
    RED = "red"


class Name(str):
    pass


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_plain_json_comes_back_as_is_with_its_keys_and_canonical_bytes(value: dict[str, Any]) -> None:
    assume(TAG not in all_keys(value))  # a "$stepfork" key takes the pairs form (docs/values.md)
    converted = to_jsonable(value)
    assert converted is value
    facts = take_plain_facts(converted)
    if facts is None:  # only ints beyond 64 bits (orjson refuses them) or keys the walk tags
        return
    assert facts.keys == all_keys(value)
    if not facts.risky_floats:
        assert facts.encoded == canonical_json(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": [1, (2, 3)]}, {"a": [1, {"$stepfork": "tuple", "value": [2, 3]}]}),
        ({"a": {"b": float("nan")}}, {"a": {"b": {"$stepfork": "float", "value": "nan"}}}),
        ([{"x": Level.LOW}], [{"x": {"$stepfork": "enum", "value": 1, "type": "Level"}}]),
        ({"c": Colour.RED}, {"c": {"$stepfork": "enum", "value": "red", "type": "Colour"}}),
        ({"s": Name("n")}, {"s": "n"}),
        ({"k": {Name("b"): 1}}, {"k": {"$stepfork": "dict", "value": [["b", 1]]}}),
        ({"k": {1: 2}}, {"k": {"$stepfork": "dict", "value": [[1, 2]]}}),
        ({"k": {"$stepfork": 1}}, {"k": {"$stepfork": "dict", "value": [["$stepfork", 1]]}}),
        ({"t": "a\ud800"}, {"t": {"$stepfork": "str", "value": "Ye2ggA=="}}),
    ],
)
def test_values_the_scan_cannot_prove_plain_are_tagged_by_the_walk(value: Any, expected: Any) -> None:
    assert to_jsonable(value) == expected


def test_big_ints_and_risky_floats_stay_plain_and_keep_the_canonical_rule() -> None:
    value = {"big": 2**70, "tiny": 1e-05, "ok": 0.5}
    assert to_jsonable(value) is value
    assert canonical_json(value) == b'{"big":1180591620717411303424,"ok":0.5,"tiny":1e-05}'
    facts = take_plain_facts({"tiny": 1e-05})
    assert facts is not None
    assert facts.risky_floats


def test_nesting_at_max_depth_and_cycles_are_still_refused() -> None:
    deep: Any = []
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(TraceSerializationError) as info:
        to_jsonable(deep)
    assert info.value.code == "too_deep"
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(TraceSerializationError) as info:
        to_jsonable({"a": loop})
    assert info.value.code == "cycle"


@trace_tool
def send(payload: dict[str, Any]) -> dict[str, Any]:
    return {"echo": payload}


def test_the_fast_path_still_redacts_deep_sensitive_keys_and_patterns(tmp_path: Path) -> None:
    payload = {"a": [{"b": {"apiKey": "plain-value-1"}}], "note": "use sk-abcdefgh12345678 here"}
    out = tmp_path / "r.sftrace"
    with record("hot", output=out):
        send(payload)
    text = (out / "events.jsonl").read_text(encoding="utf-8")
    assert "plain-value-1" not in text
    assert "sk-abcdefgh12345678" not in text
    call = loads_json(text.splitlines()[1])
    assert call["input"]["payload"]["a"][0]["b"]["apiKey"] == REPLACEMENT
    assert "/input/payload/a/0/b/apiKey" in call["redactions"]
    assert "/input/payload/note" in call["redactions"]


def test_a_redactor_with_an_extra_pattern_or_key_sees_every_plain_payload(tmp_path: Path) -> None:
    rules = Redactor(extra_keys=["tenant"], extra_patterns=[r"ACME-\d+"])
    out = tmp_path / "x.sftrace"
    with record("hot", output=out, redactor=rules):
        send({"tenant": "t1", "order": "ACME-42"})
    text = (out / "events.jsonl").read_text(encoding="utf-8")
    assert '"t1"' not in text
    assert "ACME-42" not in text


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_a_bundle_restores_the_cyclic_gc_state(tmp_path: Path, enabled: bool) -> None:
    out = tmp_path / "g.sftrace"
    with record("gc", output=out):
        send({"n": 1})
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert len(Trace.load(out).events) >= 4
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


_FRAGMENTS = st.sampled_from(
    [n.decode().upper() for n in SCREEN_NEEDLES]
    + [n.decode() for n in SCREEN_NEEDLES]
    + ["ghp", "_", "sk", "-", "to", "ken", " ", "\u212a", "é", "\n", '"', "\\", "a", "Z"]
    + ["Set-Cookie: ", "sid=", "'", "coo", "kie"]
)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.one_of(_FRAGMENTS, st.text(max_size=6)), max_size=12))
def test_the_screen_flags_exactly_the_texts_holding_a_needle_in_any_ascii_case(parts: list[str]) -> None:
    text = "".join(parts)
    encoded = orjson.dumps({"t": text})
    expected = any(needle in encoded.lower() for needle in SCREEN_NEEDLES)
    assert Redactor().may_change(["t"], encoded) is expected


_KEYS = st.sampled_from(
    [
        *("t", "max_tokens", "prompt_tokens", "Total_Tokens", "api_key", "token", "x-token", 'a"token'),
        *("é_token", "token=abcdefghij", "sk-abcdefghijkl", "secret_name", "aws"),
    ]
)
_VALUES = st.recursive(
    st.one_of(st.lists(_FRAGMENTS, max_size=4).map("".join), st.integers(0, 9), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(value=st.dictionaries(_KEYS, _VALUES, max_size=5))
def test_a_payload_the_key_aware_screen_passes_is_never_changed_by_the_walk(value: dict[str, Any]) -> None:
    # Soundness of cutting clean needle-holding keys (max_tokens...) out of the screened text: whatever the
    # screen lets through, the full redaction walk leaves unchanged, with no finding.
    facts = take_plain_facts(value)
    assert facts is not None
    rules = Redactor()
    if not rules.may_change(facts.keys, facts.encoded):
        result = rules.redact(value)
        assert result.findings == []
        assert result.value is value


def test_provider_usage_keys_do_not_send_a_clean_payload_to_the_walk() -> None:
    rules = Redactor()
    clean = {"model": "m", "max_tokens": 5, "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
    facts = take_plain_facts(clean)
    assert facts is not None
    assert rules.may_change(facts.keys, facts.encoded) is False
    for dirty in (
        {**clean, "note": "token=abcdefghijkl"},  # a needle in a value still goes to the walk
        {**clean, "token=abcdefghijkl": 1},  # a key that a text rule changes
        {**clean, 'x"token': 1},  # a needle-holding key with an escaped character: not cut
    ):
        facts = take_plain_facts(dirty)
        assert facts is not None
        assert rules.may_change(facts.keys, facts.encoded) is True


def test_a_cookie_header_in_a_tool_output_goes_to_the_walk_and_an_llm_payload_does_not() -> None:
    # the cookie_header rule's needle ("cookie") occurs in no key of a typical provider payload, so such a
    # payload still passes the screen; a header dump holding one is screened in and redacted
    rules = Redactor()
    llm = {
        "model": "gpt-4o-mini",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Summarise the page."}],
        "tools": [{"type": "function", "function": {"name": "fetch", "parameters": {"type": "object"}}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42},
    }
    facts = take_plain_facts(llm)
    assert facts is not None
    assert rules.may_change(facts.keys, facts.encoded) is False
    dump = {"output": "HTTP/1.1 200 OK\r\nSet-Cookie: sessionid=Z9abcdefgh; Path=/\r\n\r\n<html>"}
    facts = take_plain_facts(dump)
    assert facts is not None
    assert rules.may_change(facts.keys, facts.encoded) is True
    assert rules.redact(dump).value == {"output": "HTTP/1.1 200 OK\r\nSet-Cookie: [REDACTED]\r\n\r\n<html>"}
