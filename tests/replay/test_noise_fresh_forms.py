"""Fresh values in the forms agents write them (NEWCOMER4 F2 and F4; docs/diff.md "Noise rules",
docs/replay.md "Fresh values in the output comparison", docs/decisions.md).

- A ``datetime`` read from the run's clock and returned as the object (a dict value, a pydantic model
  field) is recorded tagged, ``{"$stepfork": "datetime", "value": ISO}``; its ISO text is a clock reading
  as the plain string is, so replays MATCH and two recordings diff EQUIVALENT. So is a ``time.time()``
  float or ``int(time.time() * 1000)`` returned as a JSON number.
- ``uuid4().hex[:8].upper()``, the ISO 8601 basic format ``20261206T160041Z`` and the integers drawn from
  the system's randomness (``secrets.randbelow``, ``SystemRandom().randint``/``randrange``) are made anew
  too.
- What a tool handed out, a time outside the run and two readings where the recording had one still
  diverge: the renaming is one-to-one.
"""

from __future__ import annotations

import datetime
import random
import secrets
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from secrets import randbelow
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint
from stepfork.trace import minting, record, trace_tool

REPLAYS = 5
UTC = datetime.UTC


class Report(BaseModel):
    id: uuid.UUID
    created_at: datetime.datetime
    answer: str


@trace_tool
def weather(city: str) -> dict[str, Any]:
    return {"city": city, "temp_c": 21}


def recorded(tmp_path: Path, agent: Callable[[], Any], name: str = "run") -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("fresh", output=bundle) as session:
        session.set_output(agent())
    return bundle


def assert_noise_only(tmp_path: Path, agent: Callable[[], Any], paths: set[str]) -> None:
    """Unchanged ``agent`` replays MATCHED every time, with ``paths`` renamed, and two recordings of it
    diff EQUIVALENT (and not under ``--strict``: the values did differ)."""
    bundle = recorded(tmp_path, agent)
    for _ in range(REPLAYS):
        outcome = replay_entrypoint(bundle, agent)
        assert outcome.behavior.status == "MATCHED", outcome.behavior.message
        assert {(d.path, d.noise) for d in outcome.behavior.ignored} == {(p, "renamed id") for p in paths}
    again = recorded(tmp_path, agent, "again")
    assert diff_traces(bundle, again).equivalent, diff_traces(bundle, again).changes
    assert not diff_traces(bundle, again, strict=True).equivalent


# -- F4: a datetime object read from the run's clock ---------------------------------------------------


def dict_datetime_agent() -> dict[str, Any]:
    return {"answer": weather("Paris")["temp_c"], "created_at": datetime.datetime.now(UTC)}


def model_agent() -> Report:
    answer = f"{weather('Paris')['temp_c']}C"
    return Report(id=uuid.uuid4(), created_at=datetime.datetime.now(UTC), answer=answer)


def test_a_datetime_object_from_the_runs_clock_is_fresh_in_a_dict_and_a_pydantic_model(
    tmp_path: Path,
) -> None:
    assert_noise_only(tmp_path / "dict", dict_datetime_agent, {"$.created_at"})
    assert_noise_only(tmp_path / "model", model_agent, {"$.value.created_at", "$.value.id.value"})


@trace_tool
def fetch_booking(ref: str) -> dict[str, Any]:
    return {"ref": ref, "booked_at": datetime.datetime.now(UTC)}


def booking_agent(own: bool = False, ahead: datetime.timedelta = datetime.timedelta(0)) -> dict[str, Any]:
    booking = fetch_booking("BK-1")
    if own:  # its own clock where it should return the tool's time
        return {"booked_at": datetime.datetime.now(UTC)}
    return {"booked_at": booking["booked_at"], "remind_at": datetime.datetime.now(UTC) + ahead}


def test_a_datetime_a_tool_handed_out_or_outside_the_run_is_compared_exactly(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, booking_agent)
    assert replay_entrypoint(bundle, booking_agent).behavior.status == "MATCHED"
    own = replay_entrypoint(bundle, lambda: booking_agent(own=True))
    assert (own.behavior.status, own.behavior.path) == ("DIVERGED", "booked_at")
    week = datetime.timedelta(days=7)
    ahead = recorded(tmp_path, lambda: booking_agent(ahead=week), "ahead")
    late = replay_entrypoint(ahead, lambda: booking_agent(ahead=week))
    assert (late.behavior.status, late.behavior.path) == ("DIVERGED", "remind_at")


@trace_tool
def schedule(task: str, at: datetime.datetime) -> dict[str, str]:
    return {"task": task, "status": "queued"}


def scheduling_agent(ahead: datetime.timedelta = datetime.timedelta(0)) -> dict[str, str]:
    return schedule("report", at=datetime.datetime.now(UTC) + ahead)


def test_a_datetime_object_in_a_tools_input_is_renamed_by_replays_matching(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, scheduling_agent)
    outcome = replay_entrypoint(bundle, scheduling_agent)
    assert (outcome.exit_code, outcome.behavior.status) == (0, "MATCHED"), outcome.behavior.message
    assert [(d.path, d.reason) for d in outcome.ignored] == [("$.at", "renamed id")]
    week = datetime.timedelta(days=7)
    ahead = recorded(tmp_path, lambda: scheduling_agent(week), "ahead")
    late = replay_entrypoint(ahead, lambda: scheduling_agent(week))  # a time the agent decided
    assert (late.exit_code, late.behavior.status) == (1, "NOT COMPARED")


# -- a clock reading as a JSON number ----------------------------------------------------------------


def number_clock_agent() -> dict[str, Any]:
    weather("Paris")
    return {"at": time.time(), "stamp": int(time.time() * 1000), "ns": time.time_ns()}


def test_an_epoch_number_from_the_runs_clock_is_fresh(tmp_path: Path) -> None:
    assert_noise_only(tmp_path, number_clock_agent, {"$.at", "$.stamp", "$.ns"})


def one_reading_agent(two: bool = False, ahead: int = 0) -> dict[str, Any]:
    weather("Paris")
    first = int(time.time() * 1000) + ahead
    return {"started": first, "logged": first + 1 if two else first, "count": 1_000_000_000_000}


def test_an_epoch_number_renames_one_to_one_and_never_outside_the_run(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, one_reading_agent)
    assert replay_entrypoint(bundle, one_reading_agent).behavior.status == "MATCHED"
    two = replay_entrypoint(bundle, lambda: one_reading_agent(two=True))  # one reading became two
    assert (two.behavior.status, two.behavior.path) == ("DIVERGED", "started")  # logged bound it first
    day = 86_400_000
    ahead = recorded(tmp_path, lambda: one_reading_agent(ahead=day), "ahead")
    late = replay_entrypoint(ahead, lambda: one_reading_agent(ahead=day))  # a deadline: behaviour
    assert (late.behavior.status, late.behavior.path) == ("DIVERGED", "logged")


@trace_tool
def fetch_order(ref: str) -> dict[str, Any]:
    return {"ref": ref, "created": int(time.time()), "updated": int(time.time()) + 1}


def order_agent(field: str = "created") -> dict[str, Any]:
    return {"created": fetch_order("ORD-1")[field]}


def test_an_epoch_number_a_tool_handed_out_is_compared_exactly(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, order_agent)
    assert replay_entrypoint(bundle, order_agent).behavior.status == "MATCHED"
    other = replay_entrypoint(bundle, lambda: order_agent("updated"))
    assert (other.behavior.status, other.behavior.path) == ("DIVERGED", "created")
    own = replay_entrypoint(bundle, lambda: {"created": int(time.time()) + 2})
    assert (own.behavior.status, own.behavior.path) == ("DIVERGED", "created")


# -- F2: minted and clock values after common formatting ---------------------------------------------


@trace_tool
def create_order(item: str, key: str) -> dict[str, str]:
    return {"item": item, "status": "open"}


def formatted_agent() -> dict[str, str]:
    create_order("book", key=f"IDEM-{uuid.uuid4().hex[:8].upper()}")  # a minted key in a tool's input
    return {
        "ticket": f"TKT-{uuid.uuid4().hex[:8].upper()}",
        "upper_uuid": str(uuid.uuid4()).upper(),
        "stamp": datetime.datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),  # equal within one second
        "stamp_offset": datetime.datetime.now(UTC).astimezone().strftime("run-%Y%m%dT%H%M%S.%f%z"),
        "padded": f"ORD-{randbelow(10**8):08d}",  # imported before the session
        "below": str(secrets.randbelow(10**12)),
        "ranged": f"R{random.SystemRandom().randint(10**9, 10**10 - 1)}",
        "step": str(secrets.SystemRandom().randrange(0, 10**10, 7)),
    }


def test_formatted_minted_and_clock_values_are_fresh(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, formatted_agent)
    outcome = replay_entrypoint(bundle, formatted_agent)
    assert outcome.behavior.status == "MATCHED", outcome.behavior.message
    assert outcome.exit_code == 0
    assert [(d.path, d.reason) for d in outcome.ignored] == [("$.key", "renamed id")]
    fields = {"ticket", "upper_uuid", "stamp_offset", "padded", "below", "ranged", "step"}
    assert {d.path for d in outcome.behavior.ignored} - {"$.stamp"} == {f"$.{f}" for f in fields}
    again = recorded(tmp_path, formatted_agent, "again")
    assert diff_traces(bundle, again).equivalent, diff_traces(bundle, again).changes


@trace_tool
def book(city: str) -> dict[str, str]:
    return {"city": city, "booking": f"BK-{uuid.uuid4().hex[:8].upper()}"}


def booking_id_agent(own: bool = False) -> dict[str, str]:
    booking = book("Paris")
    return {"booking": f"BK-{uuid.uuid4().hex[:8].upper()}" if own else booking["booking"]}


def test_an_upper_cased_id_a_tool_handed_out_must_match_exactly(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, booking_id_agent)
    assert replay_entrypoint(bundle, booking_id_agent).behavior.status == "MATCHED"
    wrong = replay_entrypoint(bundle, lambda: booking_id_agent(own=True))
    assert (wrong.behavior.status, wrong.behavior.path) == ("DIVERGED", "booking")
    # two recordings: the tool minted each (its output pairs them), the agent passed each on
    assert diff_traces(bundle, recorded(tmp_path, booking_id_agent, "again")).equivalent
    swapped = recorded(tmp_path, lambda: booking_id_agent(own=True), "own")
    assert [c.path for c in diff_traces(bundle, swapped).changes] == ["output.booking"]


@settings(max_examples=80, deadline=None)
@given(
    bound=st.integers(min_value=2, max_value=10**20),
    how=st.sampled_from(["randbelow", "randrange", "randint"]),
)
def test_a_number_drawn_from_the_systems_randomness_is_minted_from_six_digits(bound: int, how: str) -> None:
    log = minting.start()
    try:
        if how == "randbelow":
            value = randbelow(bound)
        elif how == "randrange":
            value = random.SystemRandom().randrange(bound)
        else:
            value = secrets.SystemRandom().randint(0, bound - 1)
        seeded = random.randint(0, bound - 1)  # the seeded global generator: replayed, never minted
    finally:
        minting.stop(log)
    width = len(str(bound - 1))
    padded = f"{value:0{width}d}"
    text = f"ORD-{padded}"
    found = [text[a:b] for a, b in log.spans(text)]
    assert found == ([padded] if width >= minting.MIN_NUMBER else [])
    if len(str(value)) >= minting.MIN_NUMBER:
        assert [str(value)[a:b] for a, b in log.spans(str(value))] == [str(value)]
    nines = str(bound)[0] == "9" and set(str(bound)[1:]) == {"0"}  # randbelow(900000) + 100000
    shifted = str(value + 10 ** (len(str(bound)) - 1)) if nines else None
    if str(seeded) not in (str(value), padded, shifted) and f"{seeded:0{width}d}" not in (padded, shifted):
        assert log.spans(f"x {seeded} {seeded:0{width}d}") == []


def _drawn(draw: Callable[[], int]) -> tuple[minting.MintLog, int]:
    log = minting.start()
    try:
        value = draw()
    finally:
        minting.stop(log)
    return log, value


def test_a_six_digit_code_is_minted_as_a_whole_number_only() -> None:
    for draw in (lambda: random.SystemRandom().randint(100000, 999999), lambda: randbelow(900000) + 100000):
        log, code = _drawn(draw)
        text = f"Your code is {code}. Order ORD{code}, ref {code}-A."
        assert [text[a:b] for a, b in log.spans(text)] == [str(code)] * 3
        # never a part of a longer number: a timestamp, a phone number holding those digits
        assert log.spans(f"{code}7 1{code} 0.{code}1") == []
        assert [str(code)[a:b] for a, b in log.spans(str(code))] == [str(code)]
    # fewer than 6 digits is data (a die roll, a 4-digit PIN): not noted
    log, pin = _drawn(lambda: secrets.randbelow(9000) + 1000)
    assert not log
    assert log.spans(f"PIN {pin:06d} {pin}") == []


def test_a_six_digit_number_the_run_did_not_draw_is_not_minted() -> None:
    log, code = _drawn(lambda: random.SystemRandom().randint(100000, 999999))
    constant = 482913 if code != 482913 else 482914
    assert log.spans(f"code {constant}") == []


def test_recorded_short_numbers_are_found_as_whole_digit_runs_and_round_trip() -> None:
    recorded = minting.RecordedMinted(["482913", "12345", "abc123", "deadbeef01"])
    assert recorded.values == {"482913", "deadbeef01"}  # a 5-digit or a short non-number is no value
    parsed = minting.RecordedMinted.parse(recorded.to_json())
    assert parsed is not None
    assert parsed.values == recorded.values
    text = "code 482913, id deadbeef01, 14829130 and 9482913"
    assert [text[a:b] for a, b in parsed.spans(text)] == ["482913", "deadbeef01"]
