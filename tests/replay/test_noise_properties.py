"""Property tests of equality up to a renaming of fresh ids (issue 28; stepfork.replay.noise).

Over JSON values whose strings mix fresh ids (uuids of a random or time version, ``lc_run--<uuid>``) with
words: equality up to renaming is an equivalence (reflexive, symmetric, transitive); a one-to-one renaming
of fresh ids never changes the verdict; and it never equates values that differ in a non-id leaf, in an id
the recording handed out, or by a renaming that maps two ids to one. Values each side minted
(``stepfork.trace.minting``) rename whatever they look like, and a value not minted never does.
"""

from __future__ import annotations

import datetime
import string
from datetime import UTC
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from stepfork.replay.noise import Comparison, NoiseRules, Origins, compare_output, is_opaque_id
from stepfork.replay.noise.ids import fresh_by_shape, split
from stepfork.trace.minting import RecordedMinted

ALNUM = string.ascii_letters + string.digits
IDS = st.one_of(  # fresh by shape: uuids of a random or time version (stepfork.replay.noise.ids)
    st.uuids(version=4).map(str),
    st.uuids(version=1).map(str),
    st.uuids(version=4).map(lambda u: f"lc_run--{u}-0"),
    st.uuids(version=4).map(lambda u: f"run-{u.hex[:8]}-{u}"),
).filter(fresh_by_shape)
MINTED = st.text(alphabet="0123456789abcdef", min_size=8, max_size=32)
"""Values a run minted (``uuid4().hex[:n]``), whatever they look like: ``12345678`` and ``abcdefab``
included."""
WORDS = st.sampled_from(["hello", "call_weather_1", "Paris", "msg_01", "21", "sunny", "ORD-1001", "a-b"])
SEPARATORS = st.sampled_from([" ", ": ", "/", '"', ", "])
KEYS = st.sampled_from(["a", "b", "id", "items", "name", "reply"])


@st.composite
def texts(draw: st.DrawFn, ids: list[str]) -> str:
    tokens = draw(st.lists(st.one_of(WORDS, st.sampled_from(ids)), min_size=1, max_size=4))
    out = tokens[0]
    for token in tokens[1:]:
        out += draw(SEPARATORS) + token
    return out


@st.composite
def documents(draw: st.DrawFn) -> tuple[Any, list[str]]:
    """A JSON value and the pool of ids its strings were drawn from."""
    ids = draw(st.lists(IDS, min_size=2, max_size=5, unique=True))
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), texts(ids))
    value = draw(
        st.recursive(
            leaves,
            lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
            max_leaves=12,
        )
    )
    return value, ids


def rename(value: Any, mapping: dict[str, str]) -> Any:
    """``value`` with every token in ``mapping`` replaced (separators kept)."""
    if isinstance(value, dict):
        return {k: rename(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [rename(v, mapping) for v in value]
    if isinstance(value, str):
        seps, tokens = split(value)
        out = seps[0]
        for token, sep in zip(tokens, seps[1:], strict=True):
            out += mapping.get(token, token) + sep
        return out
    return value


def tokens_of(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [t for v in value.values() for t in tokens_of(v)]
    if isinstance(value, list):
        return [t for v in value for t in tokens_of(v)]
    return split(value)[1] if isinstance(value, str) else []


def equal(a: Any, b: Any, origins: Origins) -> bool:
    return not [d for d in compare_output(a, b, origins) if d.noise is None]


@given(documents(), st.data())
def test_a_one_to_one_renaming_of_fresh_ids_is_equal_and_equality_is_an_equivalence(
    doc: tuple[Any, list[str]], data: st.DataObject
) -> None:
    value, ids = doc
    handed = data.draw(st.lists(st.sampled_from(ids), max_size=1, unique=True))
    origins = Origins(values=handed)
    fresh = [i for i in ids if i not in handed]
    targets = data.draw(st.lists(IDS, min_size=len(fresh), max_size=len(fresh), unique=True))
    assume(not set(targets) & set(ids))
    first = rename(value, dict(zip(fresh, targets, strict=True)))
    again = data.draw(st.lists(IDS, min_size=len(fresh), max_size=len(fresh), unique=True))
    assume(not set(again) & (set(ids) | set(targets)))
    second = rename(first, dict(zip(targets, again, strict=True)))
    assert equal(value, value, origins)  # reflexive
    assert equal(value, first, origins)
    assert equal(first, value, origins)  # symmetric
    assert equal(first, second, origins)
    assert equal(value, second, origins)  # transitive


@given(documents(), st.data())
def test_equality_is_symmetric_on_any_pair(doc: tuple[Any, list[str]], data: st.DataObject) -> None:
    value, ids = doc
    other = rename(value, {ids[0]: ids[1]}) if data.draw(st.booleans()) else rename(value, {ids[0]: "Paris"})
    origins = Origins(values=data.draw(st.lists(st.sampled_from(ids), max_size=2)))
    assert equal(value, other, origins) == equal(other, value, origins)


@given(documents(), st.data())
def test_a_changed_non_id_leaf_is_never_equal(doc: tuple[Any, list[str]], data: st.DataObject) -> None:
    value, _ = doc
    words = [t for t in tokens_of(value) if not is_opaque_id(t)]
    assume(words)
    word = data.draw(st.sampled_from(words))
    assert not equal(value, rename(value, {word: word + "x"}), Origins())
    assert not equal([value, 1], [value, 2], Origins())


@given(documents(), st.data())
def test_a_changed_handed_out_id_is_never_equal(doc: tuple[Any, list[str]], data: st.DataObject) -> None:
    inner, ids = doc
    value = [inner, f"ref {ids[0]}"]  # one id present at least (an assume() here filtered most documents)
    present = [i for i in ids if i in tokens_of(value)]
    handed = data.draw(st.sampled_from(present))
    other = data.draw(IDS.filter(lambda i: i not in ids))
    assert not equal(value, rename(value, {handed: other}), Origins(values=[handed]))


@given(documents(), st.data())
def test_a_renaming_that_maps_two_ids_to_one_is_never_equal(
    doc: tuple[Any, list[str]], data: st.DataObject
) -> None:
    inner, ids = doc
    a, b = ids[0], ids[1]
    value = [inner, a, f"reply to {b}", {"again": a}]  # a twice, b once: both present
    merged = data.draw(IDS.filter(lambda i: i not in ids))
    assert not equal(value, rename(value, {a: merged, b: merged}), Origins())
    # and the other way: one id split into two
    c, d = data.draw(st.lists(IDS.filter(lambda i: i not in ids), min_size=2, max_size=2, unique=True))
    assert not equal(value, [rename(inner, {a: c}), c, f"reply to {b}", {"again": d}], Origins())


@given(st.lists(MINTED, min_size=2, max_size=4, unique=True), st.data())
def test_minted_values_rename_whatever_they_look_like_and_others_never(
    pool: list[str], data: st.DataObject
) -> None:
    others = data.draw(
        st.lists(MINTED.filter(lambda v: v not in pool), min_size=len(pool), max_size=len(pool), unique=True)
    )
    assume(not any(a in b or b in a for a in pool for b in others))
    value = {"ref": pool[0], "all": [f"ref-{v}" for v in pool], "note": f"booked {pool[-1]} today"}
    renamed = rename_minted(value, dict(zip(pool, others, strict=True)))
    left, right = Origins(minted=RecordedMinted(pool)), Origins(minted=RecordedMinted(others))
    assert not [d for d in compare_output(value, renamed, left, live=right) if d.noise is None]
    # not minted on the right (a digest, a value handed out elsewhere): compared exactly
    assert [
        d
        for d in compare_output(value, renamed, left, live=Origins(minted=RecordedMinted([])))
        if d.noise is None
    ]
    # one minted value for two: never equal
    merged = rename_minted(value, {pool[0]: others[0], pool[1]: others[0]})
    assert [d for d in compare_output(value, merged, left, live=right) if d.noise is None]


def rename_minted(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: rename_minted(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [rename_minted(v, mapping) for v in value]
    if isinstance(value, str):
        for old, new in mapping.items():
            value = value.replace(old, new)
    return value


YEAR_2001, YEAR_2090 = datetime.datetime(2001, 1, 1), datetime.datetime(2090, 1, 1)
CLOCKS = (  # clock values a tool hands out, outside any run here (no clock-reading rule applies)
    st.datetimes(min_value=YEAR_2001, max_value=YEAR_2090, timezones=st.just(UTC)).map(
        datetime.datetime.isoformat
    ),
    st.datetimes(min_value=YEAR_2001, max_value=YEAR_2090).map(
        lambda d: d.strftime("%a, %d %b %Y %H:%M:%S GMT")
    ),
    st.integers(min_value=10**12, max_value=10**13 - 1),  # epoch milliseconds
)


@given(st.sampled_from(CLOCKS), st.data())
def test_a_tool_clock_value_is_renamed_wherever_the_agent_passes_it_on_and_no_other_value_is(
    kind: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    # NEWCOMER3 F1: two aligned tool outputs' clock values pair; the agent's later strings and output
    # holding them compare equal up to that pairing, and a value standing for the other tool's never does
    first, second, first_b, second_b = data.draw(st.lists(kind, min_size=4, max_size=4, unique_by=str))
    scope = Comparison(NoiseRules.shipped())
    outputs = {"observed_at": first, "seen_at": second}, {"observed_at": first_b, "seen_at": second_b}
    assert all(d.noise == "timing" for d in scope.compare(*outputs, "tool_output"))
    before = data.draw(st.sampled_from(['{"observed_at": "', "at ", "", "(", "t="]))
    after = data.draw(st.sampled_from(['"}', "", ".", " and later", ")"]))
    carried = f"{before}{first}{after}"
    renamed = scope.compare({"m": carried}, {"m": f"{before}{first_b}{after}"}, "llm_input")
    assert [d.noise for d in renamed] == ["renamed id"]
    assert [d.noise for d in scope.compare(first, first_b, "run_output")] == ["renamed id"]
    wrong = scope.compare({"m": carried}, {"m": f"{before}{second_b}{after}"}, "llm_input")
    assert [d.noise for d in wrong] == [None]  # the other tool's value
    assert [d.noise for d in scope.compare(first, second_b, "run_output")] == [None]
