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
