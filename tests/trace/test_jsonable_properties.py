"""Property tests: to_jsonable/from_jsonable round-trip every supported value exactly (CASES C2, C3)."""

from __future__ import annotations

import datetime as dt
import enum
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from stepfork.trace.canonical import canonical_json, fingerprint
from stepfork.trace.jsonable import from_jsonable, to_jsonable

sys.path.insert(0, str(Path(__file__).parent))  # the shared strategies (importlib import mode)
from json_strategies import json_ints, json_text, same


class Mood(enum.Enum):
    HAPPY = "happy"
    PAIR = (1, 2)


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2**40


class Kind(enum.StrEnum):
    A = "a"


ZONES = st.sampled_from(
    [None, dt.UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(-dt.timedelta(hours=8))]
)
lone_surrogates = st.builds(
    lambda a, b, c: a + b + c,
    st.text(max_size=3),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2),
    st.text(max_size=3),
)
finite_or_infinite = st.floats(allow_nan=False)

hashable_scalars = st.one_of(
    st.none(),
    st.booleans(),
    json_ints,
    finite_or_infinite,
    json_text,
    lone_surrogates,
    st.binary(max_size=12),
    st.datetimes(timezones=ZONES),
    st.dates(),
    st.times(timezones=ZONES),
    st.timedeltas(),
    st.decimals(allow_nan=False),
    st.uuids(),
)
hashables = st.recursive(
    hashable_scalars,
    lambda c: st.one_of(st.tuples(c, c), st.frozensets(c, max_size=3)),
    max_leaves=6,
)
python_values = st.recursive(
    st.one_of(hashables, st.floats(), st.decimals(allow_nan=True).filter(lambda d: not d.is_snan())),
    lambda c: st.one_of(
        st.lists(c, max_size=4),
        st.tuples(c, c),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=3),
        st.dictionaries(json_text, c, max_size=4),
        st.dictionaries(hashables, c, max_size=3),
        st.dictionaries(st.sampled_from(["$stepfork", "value", "type"]), c, max_size=3),
    ),
    max_leaves=20,
)


@settings(max_examples=250, deadline=None)
@given(python_values)
def test_from_jsonable_of_to_jsonable_gives_back_the_same_value_with_the_same_types(value):
    assert same(from_jsonable(to_jsonable(value)), value)


@settings(max_examples=200, deadline=None)
@given(python_values)
def test_converted_values_are_plain_json_with_a_stable_fingerprint(value):
    encoded = to_jsonable(value)
    canonical_json(encoded)  # plain JSON: raises otherwise
    assert fingerprint(to_jsonable(value)) == fingerprint(encoded)
    assert fingerprint(to_jsonable(from_jsonable(encoded))) == fingerprint(encoded)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([*Mood, *Level, *Kind]))
def test_enum_members_come_back_as_members_when_the_annotation_names_the_enum(member):
    encoded = to_jsonable({"m": member})
    assert encoded["m"]["$stepfork"] == "enum"
    assert from_jsonable(encoded, dict[str, type(member)])["m"] is member
