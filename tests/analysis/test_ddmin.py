"""The delta-debugging searches (analysis/ddmin.py): minimal, closed under parents, memoized."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from stepfork.analysis.minimize.ddmin import MemoOracle, classic_ddmin, closure, dd_prefix


def needs(required: set[int]):
    def oracle(subsets: Sequence[frozenset[int]]) -> list[bool]:
        return [required <= s for s in subsets]

    return oracle


def test_finds_exactly_the_calls_the_failure_depends_on() -> None:
    result = dd_prefix(list(range(50)), needs({4, 31}))
    assert result.units == (4, 31)
    assert result.minimal


def test_a_child_is_never_kept_without_its_parent() -> None:
    parents = {0: None, 1: 0, 2: 1, 3: None}  # 2 nested in 1 nested in 0
    result = dd_prefix([0, 1, 2, 3], needs({2}), parents=parents)
    assert result.units == (0, 1, 2)


def test_every_subset_the_oracle_sees_is_closed_under_parents() -> None:
    parents = {i: (i - 1 if i % 3 else None) for i in range(12)}
    seen: list[frozenset[int]] = []

    def oracle(subsets: Sequence[frozenset[int]]) -> list[bool]:
        seen.extend(subsets)
        return [{5, 10} <= s for s in subsets]

    dd_prefix(list(range(12)), oracle, parents=parents)
    assert all(closure(s, parents) == s for s in seen)


def test_repeated_subsets_are_answered_from_the_cache() -> None:
    calls: list[frozenset[int]] = []

    def oracle(subsets: Sequence[frozenset[int]]) -> list[bool]:
        calls.extend(subsets)
        return [3 in s for s in subsets]

    memo = MemoOracle(oracle)
    memo([{3}, {3}, {1, 3}])
    memo([{3}])
    assert memo.tests == 2
    assert len(calls) == 2


def test_the_result_is_one_minimal_even_for_a_non_monotone_oracle() -> None:
    # fails when exactly one of {2, 5} is present together with 7: not monotone
    def oracle(subsets: Sequence[frozenset[int]]) -> list[bool]:
        return [7 in s and ((2 in s) != (5 in s)) for s in subsets]

    memo = MemoOracle(oracle)
    result = dd_prefix(list(range(10)), memo)
    kept = set(result.units)
    assert memo.one(kept)
    assert all(not memo.one(kept - {u}) for u in kept)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=120),
    data=st.data(),
    workers=st.integers(min_value=1, max_value=3),
)
def test_prefix_search_is_minimal_and_no_larger_than_classic_ddmin(n: int, data, workers: int) -> None:
    required = set(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=min(5, n))))
    ours = dd_prefix(list(range(n)), needs(required), workers=workers)
    classic = classic_ddmin(list(range(n)), needs(required))
    assert set(ours.units) == required
    assert len(ours.units) <= len(classic.units)
