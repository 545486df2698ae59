"""The ``--ignore`` hint of a divergence on a random or clock value (stepfork.replay.volatile): given for two
values of one volatile shape, never for ordinary strings."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from stepfork.replay.volatile import looks_volatile, volatile_hint


@given(st.uuids(), st.uuids())
def test_two_uuids_look_volatile(a: uuid.UUID, b: uuid.UUID) -> None:
    assert looks_volatile(str(a), str(b)) is (a != b)


@given(st.binary(min_size=8, max_size=32), st.binary(min_size=8, max_size=32))
def test_hex_ids_of_one_length_look_volatile(a: bytes, b: bytes) -> None:
    left, right = "req_" + a.hex().rjust(16, "0"), "req_" + b.hex().rjust(16, "0")
    same_length = len(left) == len(right)
    has_digit = any(c.isdigit() for c in left[4:]) and any(c.isdigit() for c in right[4:])
    assert looks_volatile(left, right) is (same_length and has_digit and left != right)


@given(
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
    st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=900)),
)
def test_iso_timestamps_of_one_layout_look_volatile(at: datetime, later: timedelta) -> None:
    a, b = at.replace(microsecond=0), (at + later).replace(microsecond=0)
    assert looks_volatile(a.isoformat(), b.isoformat())
    assert looks_volatile(a.replace(tzinfo=UTC).isoformat(), b.replace(tzinfo=UTC).isoformat())
    assert not looks_volatile(a.isoformat(), b.replace(tzinfo=UTC).isoformat())  # layouts differ


@given(st.text(max_size=40), st.text(max_size=40))
def test_ordinary_text_never_looks_volatile(a: str, b: str) -> None:
    # arbitrary text is almost never a UUID, a 16-digit hex id or a timestamp; when it is, the rule holds
    if not any(c in "0123456789-" for c in a + b):
        assert not looks_volatile(a, b)


def test_precise_examples() -> None:
    u1, u2 = str(uuid.uuid4()), str(uuid.uuid4())
    assert looks_volatile(u1, u2)
    assert not looks_volatile(u1, u1)
    assert not looks_volatile("hello there", "Hello world")
    assert not looks_volatile("shoes", "boots")
    assert not looks_volatile("order-1234", "order-1235")  # a short number is data, not an id
    assert not looks_volatile("deadbeefcafebabe", "cafebabedeadbeef")  # hex words, no digit
    assert not looks_volatile(u1, "2024-05-01T10:00:00Z")
    assert not looks_volatile("2024-05-01", "2024-05-02")  # a date alone is data (a booking), not a clock
    assert not looks_volatile("2024-13-45T10:00:00", "2024-05-01T10:00:00")  # not a date
    assert not looks_volatile(1700000000, 1700000001)
    assert looks_volatile("2024-05-01T10:00:00.123456+00:00", "2025-11-30T23:59:59.000001+00:00")
    # a clock inside a prompt (NEWCOMER 11): the rest of the text equal
    now, later = (
        "Current time: 2026-12-06T05:39:14.774649+00:00",
        "Current time: 2026-12-06T05:39:20.054360+00:00",
    )
    assert looks_volatile(now, later)
    assert not looks_volatile(now, later.replace("Current", "Local"))
    assert not looks_volatile("Meet on 2026-12-06 at noon", "Meet on 2026-12-07 at noon")


def test_the_hint_names_the_tool_and_path_shell_quoted() -> None:
    assert volatile_hint("search", "$.request_id") == (
        "if this value is random or a clock, ignore it: --ignore 'search:$.request_id'"
    )
    assert volatile_hint("search", '$["it\'s"]').endswith("""--ignore 'search:$["it'"'"'s"]'""")
