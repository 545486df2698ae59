"""How ``check_corpus`` cuts a corpus into tasks (``check._batches``) and the JSON lines its processes
exchange (``stepfork.analysis._zygote.lines``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepfork.analysis._zygote.lines import line_of, parse_line
from stepfork.analysis.check._corpus import _MAX_BATCH, _MIN_BATCH, _batches


@given(count=st.integers(0, 5000), workers=st.integers(1, 16))
def test_batches_cover_the_corpus_in_order_and_shrink(count: int, workers: int) -> None:
    batches = _batches(count, workers)
    assert [i for batch in batches for i in batch] == list(range(count))
    sizes = [len(batch) for batch in batches]
    assert all(size <= _MAX_BATCH for size in sizes)
    assert all(size >= _MIN_BATCH for size in sizes[:-1])  # only the last one may be smaller
    assert sizes == sorted(sizes, reverse=True)  # big first, small last


def test_the_last_batches_are_small_so_workers_end_together() -> None:
    sizes = [len(batch) for batch in _batches(1000, 2)]
    assert sizes[0] == 125  # a quarter of the corpus per worker
    assert sizes[-3:-1] == [_MIN_BATCH, _MIN_BATCH]
    assert sizes[-1] <= _MIN_BATCH


@given(count=st.integers(0, 300), size=st.integers(1, 50))
def test_an_explicit_batch_size_is_kept(count: int, size: int) -> None:
    batches = _batches(count, 4, size)
    assert [len(batch) for batch in batches[:-1]] == [size] * (len(batches) - 1)
    assert [i for batch in batches for i in batch] == list(range(count))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_a_line_reads_back_as_the_value_it_was_made_of(value) -> None:
    # integers past 64 bits and lone surrogates (an undecodable file name) go through the stdlib
    line = line_of(value)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert parse_line(line) == value


@pytest.mark.parametrize("value", [{"step": 2**70}, {"bundle": "runs/\udcff.sftrace"}, [-(2**64)]])
def test_what_orjson_refuses_still_makes_a_line(value) -> None:
    line = line_of(value)
    back = parse_line(line)
    assert back == value
    assert json.dumps(back) == json.dumps(value)
