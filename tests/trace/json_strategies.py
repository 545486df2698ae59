"""Hypothesis strategies and a type-exact comparison shared by the canonical/jsonable/redaction tests."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

# Characters the byte rule treats specially: controls, quote, backslash, DEL, U+2028/2029, astral.
SPECIAL_CHARS = '\x00\x01\x08\t\n\x0c\r\x1f"\\/\x7f\u2028\u2029\u00e9\U0001f600\U00010000\ufeff'

json_text = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(SPECIAL_CHARS)), max_size=12
)

# Floats of every magnitude, including the band where orjson and repr() disagree (1e-9..1e-4).
json_floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.builds(
        lambda m, e: m * 10.0**e,
        st.floats(min_value=-10, max_value=10, allow_nan=False),
        st.integers(min_value=-12, max_value=22),
    ),
    st.sampled_from([0.0, -0.0, 1e-05, 1e-07, 1e16, 1e22, 5e-324, 1.7976931348623157e308, 0.1, 1.0]),
)

json_ints = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.integers(min_value=-(2**300), max_value=2**300),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]),
)

json_scalars = st.one_of(st.none(), st.booleans(), json_ints, json_floats, json_text)

json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(json_text, children, max_size=5),
    ),
    max_leaves=25,
)


def same(a: Any, b: Any) -> bool:
    """Equality that also demands equal types at every level (1 != 1.0, True != 1, -0.0 != 0.0).

    Dict key order is not compared (canonical bytes sort keys); compare bytes to check order.
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, Decimal):  # exact digits, exponent and sign; NaN equals NaN here
        return str(a) == str(b)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or repr(a) == repr(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (set, frozenset)):
        return a == b and all(any(same(x, y) for y in b) for x in a)
    return bool(a == b)


def all_keys(value: Any) -> set[str]:
    """Every dict key anywhere in the JSON ``value`` (a slow, obviously right walk to compare with)."""
    if type(value) is dict:
        return set(value).union(*(all_keys(v) for v in value.values()))
    if type(value) is list:
        return set().union(*(all_keys(v) for v in value))
    return set()
