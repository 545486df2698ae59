"""Ids an agent makes with ``random`` or from the clock (NEWCOMER2 finding 7; docs/replay.md "Fresh values in
the output comparison", docs/decisions.md).

- ``random``'s global generator is seeded: a recording whose run drew from it keeps its state at the start
  (``minted.json``), and a replay starts from it, so unchanged code draws the same nanoid-style
  ``random.choices`` id, ``random.randint`` number and shuffle: MATCHED every time. The replay leaves the
  process's generator as it found it. Code that draws differently (a wrong pick) is still DIVERGED.
- An id made from a clock reading (``f"req-{time.time_ns()}"``) holds an epoch time inside its own run's
  window: it is made anew like a minted value, so replays MATCH and two recordings diff EQUIVALENT; a time
  a tool handed out, or one outside the run (a deadline), is compared exactly.
"""

from __future__ import annotations

import datetime
import json
import random
import string
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint, run_regression_case
from stepfork.replay.noise.clock import SLACK, ClockWindow
from stepfork.trace import load_trace, minting, record, trace_tool

REPLAYS = 10
NANOID = string.ascii_letters + string.digits + "_-"


@trace_tool
def create_ticket(subject: str) -> dict[str, str]:
    return {"subject": subject, "status": "open"}


def random_ids_agent() -> dict[str, Any]:
    ticket = create_ticket("refund")
    steps = ["check", "refund", "notify"]
    random.shuffle(steps)
    return {
        "ticket": ticket["status"],
        "trace_id": "".join(random.choices(NANOID, k=21)),
        "code": str(random.randint(100000, 999999)),
        "order": steps,
    }


def clock_ids_agent() -> dict[str, str]:
    ticket = create_ticket("refund")
    return {
        "ticket": ticket["status"],
        "request": f"req-{time.time_ns()}",
        "stamp": str(int(time.time() * 1000)),
        "at": f"{time.time():.6f}",
    }


def recorded(tmp_path: Path, agent: Any, name: str = "run") -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("ids", output=bundle) as session:
        session.set_output(agent())
    return bundle


def test_ids_drawn_from_random_replay_matched_every_time(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, random_ids_agent)
    assert "random" in json.loads((bundle / "minted.json").read_text())
    before = random.getstate()
    outcomes = [replay_entrypoint(bundle, random_ids_agent) for _ in range(REPLAYS)]
    assert [o.behavior.status for o in outcomes] == ["MATCHED"] * REPLAYS, outcomes[0].behavior.message
    assert outcomes[0].result == load_trace(bundle).events[-1].output  # drawn again, not renamed
    assert random.getstate() == before  # the process's generator as the replay found it
    expected = load_trace(bundle).events[-1].output
    assert run_regression_case(random_ids_agent, bundle, expectation=expected) == expected  # exported tests
    quiet = recorded(tmp_path, lambda: create_ticket("x"), "quiet")  # drew nothing: no state kept
    assert "random" not in json.loads((quiet / "minted.json").read_text())


@trace_tool
def search_flights(dest: str) -> list[dict[str, Any]]:
    return [{"id": f"OF-{n}", "price": p} for n, p in ((1, 320), (2, 450), (3, 390))]


def picking_agent(bug: bool = False) -> dict[str, Any]:
    offers = search_flights("LIS")
    if bug:  # the regression: one draw more before the pick, so another offer is booked
        random.random()
    pick = random.choice(offers)
    return {"booked": pick["id"], "price": pick["price"]}


@pytest.fixture
def seeded() -> Any:
    """``random`` seeded with 7 for the test (the extra draw changes the pick: OF-2, then OF-1), then put
    back."""
    before = random.getstate()
    random.seed(7)
    yield
    random.setstate(before)


@pytest.mark.usefixtures("seeded")
def test_a_random_pick_replays_matched_and_a_changed_pick_is_diverged(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, picking_agent)
    assert load_trace(bundle).events[-1].output["booked"] == "OF-2"
    assert replay_entrypoint(bundle, picking_agent).behavior.status == "MATCHED"
    wrong = replay_entrypoint(bundle, lambda: picking_agent(bug=True))
    assert wrong.behavior.status == "DIVERGED"
    assert wrong.behavior.path == "booked", wrong.behavior.message


def test_a_malformed_random_state_is_left_out_and_the_replay_runs(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, random_ids_agent)
    minted = json.loads((bundle / "minted.json").read_text())
    minted["random"]["state"] = minted["random"]["state"][:10]
    assert minting.RecordedMinted.parse(minted) is not None
    assert minting.RecordedMinted.parse(minted).random_state is None  # type: ignore[union-attr]


def test_ids_made_from_the_clock_replay_matched_and_diff_equivalent(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, clock_ids_agent)
    outcomes = [replay_entrypoint(bundle, clock_ids_agent) for _ in range(REPLAYS)]
    assert [o.behavior.status for o in outcomes] == ["MATCHED"] * REPLAYS, outcomes[0].behavior.message
    assert {d.path for d in outcomes[0].behavior.ignored} == {"$.request", "$.stamp", "$.at"}
    assert {d.noise for d in outcomes[0].behavior.ignored} == {"renamed id"}
    again = recorded(tmp_path, clock_ids_agent, "again")
    assert diff_traces(bundle, again).equivalent
    assert not diff_traces(bundle, again, strict=True).equivalent


@trace_tool
def fetch_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "created": time.time_ns(), "shipped": time.time_ns() + 1}


def order_agent(field: str = "created") -> dict[str, str]:
    order = fetch_order("ORD-1")
    return {"reference": f"ord-{order[field]}"}


def test_a_clock_time_a_tool_handed_out_is_compared_exactly(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, order_agent)
    assert replay_entrypoint(bundle, order_agent).behavior.status == "MATCHED"
    wrong = replay_entrypoint(bundle, lambda: order_agent("shipped"))  # another handed-out time
    assert (wrong.behavior.status, wrong.behavior.path) == ("DIVERGED", "reference")
    own = replay_entrypoint(bundle, lambda: {"reference": f"ord-{time.time_ns()}"})  # its own clock instead
    assert (own.behavior.status, own.behavior.path) == ("DIVERGED", "reference")


def deadline_agent(days: int = 0) -> dict[str, str]:
    create_ticket("reminder")
    due = int(time.time()) + 3 * 86400 + days * 86400  # a time outside the run: what the agent decided
    return {"due": f"due-{due}"}


def test_a_time_outside_the_run_is_compared_exactly(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, deadline_agent)
    late = replay_entrypoint(bundle, lambda: deadline_agent(days=7))
    assert (late.behavior.status, late.behavior.path) == ("DIVERGED", "due")
    assert [
        c.path for c in diff_traces(bundle, recorded(tmp_path, lambda: deadline_agent(7), "late")).changes
    ] == ["output.due"]


def test_a_clock_span_is_an_epoch_time_of_10_13_16_or_19_digits_inside_the_window() -> None:
    start = 1_796_522_963_000_000_000  # 2026-12-05, in nanoseconds
    window = ClockWindow(start, start + 5 * 10**9)
    inside = ["1796522964", "1796522964123", "1796522964123456", "1796522964123456789", "1796522964.5"]
    for number in inside:
        text = f"req-{number}!"
        assert window.spans(text) == [(4, 4 + len(number))], number
    outside = [
        "1796522963" + "0" * 2,
        "179652296",
        "17965229641",
        "1796599999",
        "2796522964",
        "1696522964123",
    ]
    for number in outside:
        assert window.spans(f"req-{number}!") == [], number
    assert window.spans("x" * 200) == []


@given(st.integers(min_value=0, max_value=10**25))
def test_only_epoch_lengths_inside_the_window_are_clock_spans(number: int) -> None:
    start = 1_796_522_963_000_000_000
    window = ClockWindow(start, start + 60 * 10**9)
    digits = str(number)
    found = window.spans(f"id-{digits}")
    if found:
        assert len(digits) in (10, 13, 16, 19)
        scaled = number * 10 ** (19 - len(digits))
        assert start - SLACK <= scaled <= start + 60 * 10**9 + SLACK


def iso_clock_agent(ahead: datetime.timedelta = datetime.timedelta(0)) -> dict[str, str]:
    ticket = create_ticket("refund")
    return {
        "ticket": ticket["status"],
        "finished_at": (datetime.datetime.now() + ahead).isoformat(),  # naive local time
        "stamped": (datetime.datetime.now(datetime.UTC) + ahead).isoformat(),
        "logged": f"done at {(datetime.datetime.now(datetime.UTC) + ahead):%Y-%m-%d %H:%M:%S.%fZ}",
    }


@trace_tool
def fetch_status(order_id: str) -> dict[str, str]:
    return {"order_id": order_id, "shipped_at": datetime.datetime.now(datetime.UTC).isoformat()}


def shipping_agent(own: bool = False) -> dict[str, str]:
    status = fetch_status("ORD-1")
    return {"shipped": datetime.datetime.now(datetime.UTC).isoformat() if own else status["shipped_at"]}


@trace_tool
def ask(prompt: str) -> str:
    return "sunny"


def prompting_agent(ahead: datetime.timedelta = datetime.timedelta(0)) -> dict[str, str]:
    now = datetime.datetime.now(datetime.UTC) + ahead
    return {"answer": ask(f"Current time: {now.isoformat()}. What is the weather?")}


def test_an_iso_clock_reading_inside_the_run_replays_matched_and_a_time_outside_it_diverges(
    tmp_path: Path,
) -> None:
    # NEWCOMER3 F7: datetime.now().isoformat() is the run's clock as much as time.time_ns() is
    bundle = recorded(tmp_path, iso_clock_agent)
    outcome = replay_entrypoint(bundle, iso_clock_agent)
    assert outcome.behavior.status == "MATCHED", outcome.behavior.message
    assert {d.path for d in outcome.behavior.ignored} == {"$.finished_at", "$.stamped", "$.logged"}
    assert diff_traces(bundle, recorded(tmp_path, iso_clock_agent, "again")).equivalent
    # a time the agent computed (a reminder in an hour) is behaviour: outside the run, compared exactly
    ahead = recorded(tmp_path, lambda: iso_clock_agent(datetime.timedelta(hours=1)), "ahead")
    later = replay_entrypoint(ahead, lambda: iso_clock_agent(datetime.timedelta(hours=1)))
    assert (later.behavior.status, later.behavior.path) == ("DIVERGED", "finished_at")
    changed = diff_traces(bundle, ahead).changes
    assert [c.path for c in changed] == ["output.finished_at", "output.logged", "output.stamped"]
    # written into a call's input (a prompt): the run's own clock there is renamed too, a time ahead not
    prompted = recorded(tmp_path, prompting_agent, "prompted")
    asked = replay_entrypoint(prompted, prompting_agent)
    assert asked.behavior.status == "MATCHED", asked.behavior.message
    assert [(d.path, d.reason) for d in asked.ignored] == [("$.prompt", "renamed id")]
    ahead_prompt = recorded(tmp_path, lambda: prompting_agent(datetime.timedelta(hours=1)), "ahead_prompt")
    late = replay_entrypoint(ahead_prompt, lambda: prompting_agent(datetime.timedelta(hours=1)))
    assert (late.exit_code, late.behavior.status) == (1, "NOT COMPARED")  # the input diverged
    # a reading a tool handed out must be returned as it was: the agent's own clock instead is a change
    shipped = recorded(tmp_path, shipping_agent, "shipped")
    assert replay_entrypoint(shipped, shipping_agent).behavior.status == "MATCHED"
    own = replay_entrypoint(shipped, lambda: shipping_agent(own=True))
    assert (own.behavior.status, own.behavior.path) == ("DIVERGED", "shipped")


FORMS = ["aware", "offset", "naive-utc", "naive-local", "space", "basic", "basic-offset"]


def _iso(instant_ns: int, form: str) -> str:
    moment = datetime.datetime.fromtimestamp(instant_ns / 10**9, datetime.UTC)
    if form == "aware":
        return moment.isoformat()
    if form == "offset":
        return moment.astimezone(datetime.timezone(datetime.timedelta(hours=-5, minutes=-30))).isoformat()
    if form == "naive-utc":
        return moment.replace(tzinfo=None).isoformat()
    if form == "naive-local":
        return moment.astimezone().replace(tzinfo=None).isoformat()
    if form == "basic":  # ISO 8601 basic format (NEWCOMER4 F2)
        return moment.strftime("%Y%m%dT%H%M%SZ")
    if form == "basic-offset":
        return moment.astimezone(datetime.timezone(datetime.timedelta(hours=1))).strftime("%Y%m%dT%H%M%S%z")
    return moment.strftime("%Y-%m-%d %H:%M:%S")


@given(
    st.integers(min_value=-(10**13), max_value=10**13), st.sampled_from(FORMS), st.sampled_from(["", "at "])
)
def test_an_iso_datetime_is_a_clock_span_exactly_when_its_instant_is_inside_the_window(
    offset_ns: int, form: str, before: str
) -> None:
    start = 1_796_522_963_000_000_000
    end = start + 60 * 10**9
    window = ClockWindow(start, end)
    instant = start + offset_ns
    text = _iso(instant, form)
    found = window.spans(f"{before}{text}!")
    # the form's own precision: a whole second when it has no fraction
    shown = instant - instant % 10**9 if form == "space" or "." not in text else instant - instant % 1000
    inside = start - SLACK <= shown <= end + SLACK
    if form == "naive-local":
        utc_reading = (
            shown
            - int(
                datetime.datetime.fromtimestamp(instant / 10**9).astimezone().utcoffset().total_seconds()  # type: ignore[union-attr]
            )
            * 10**9
        )
        inside = inside or start - SLACK <= utc_reading <= end + SLACK
    if form == "naive-utc":
        local = datetime.datetime.fromtimestamp(shown / 10**9, datetime.UTC).replace(tzinfo=None).astimezone()
        inside = inside or start - SLACK <= int(local.timestamp()) * 10**9 <= end + SLACK
    assert found == ([(len(before), len(before) + len(text))] if inside else []), (text, offset_ns)


def test_a_datetime_without_seconds_or_a_date_alone_is_no_clock_span() -> None:
    start = 1_796_522_963_000_000_000
    window = ClockWindow(start, start + 60 * 10**9)
    reading = _iso(start + 10**9, "aware")
    assert window.spans(reading) == [(0, len(reading))]
    assert window.spans(reading[:16]) == []  # 2026-12-05T12:49: a meeting's minute, not a reading
    assert window.spans(reading[:10] + " and more") == []  # a date alone is data (a booking)
    assert window.spans("2026-13-45T10:00:00") == []  # digits in a datetime's places, no date
