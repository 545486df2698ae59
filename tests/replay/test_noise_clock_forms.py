"""Two clock readings rename into each other only in the same form (NEWCOMER5 F3; docs/diff.md "Clock
readings").

A reading the run took itself is fresh, but the *form* the agent writes it in is its code: seconds that
became milliseconds, an ISO datetime that became an epoch number, an aware UTC time that became naive local
time, ``Z`` that became ``+00:00``, ``T`` that became a space, the extended format that became the basic one,
UTC that became ``+01:00``. Each used to diff EQUIVALENT and replay MATCHED; each is now a change in both
``diff`` and replay (a tool's input and the run output). The same code, whose readings differ only in value
(``time.time()``'s fraction of varying length included), stays EQUIVALENT / MATCHED.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint
from stepfork.replay.noise.clock import ClockForm, clock_form, same_clock_forms
from stepfork.trace import record, trace_tool

ROUNDS = 3


@trace_tool
def schedule(job: str, at: Any) -> dict[str, bool]:
    return {"scheduled": True}


def _iso_z() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


Reading = Callable[[], Any]

# (baseline form, changed form): each pair is one change kind of the finding
CHANGES: dict[str, tuple[Reading, Reading]] = {
    "seconds to milliseconds": (lambda: str(int(time.time())), lambda: str(int(time.time() * 1000))),
    "seconds to milliseconds, numbers": (lambda: int(time.time()), lambda: int(time.time() * 1000)),
    "ISO 8601 to epoch seconds": (lambda: datetime.now(UTC).isoformat(), lambda: str(int(time.time()))),
    "aware UTC to naive local time": (
        lambda: datetime.now(UTC).isoformat(),
        lambda: datetime.now().isoformat(),
    ),
    "Z to +00:00": (_iso_z, lambda: datetime.now(UTC).isoformat()),
    "T to a space": (lambda: datetime.now(UTC).isoformat(), lambda: datetime.now(UTC).isoformat(" ")),
    "extended to basic": (
        lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        lambda: datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
    ),
    "UTC to +01:00": (
        lambda: datetime.now(UTC).isoformat(),
        lambda: datetime.now(timezone(timedelta(hours=1))).isoformat(),
    ),
    "epoch float to integer text": (lambda: str(time.time()), lambda: str(int(time.time()))),
}

# forms whose value varies from run to run while the form does not
SAME_FORMS: dict[str, Reading] = {
    "time.time() text": lambda: str(time.time()),
    "time.time() number": time.time,
    "time.time_ns() number": time.time_ns,
    "milliseconds text": lambda: str(int(time.time() * 1000)),
    "aware isoformat": lambda: datetime.now(UTC).isoformat(),
    "naive isoformat": lambda: datetime.now().isoformat(),
    "Z": _iso_z,
    "basic": lambda: datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ"),
    "a tagged datetime": lambda: datetime.now(UTC),
}


def agent(reading: Reading, *, to_tool: bool = True) -> Callable[[], dict[str, Any]]:
    """An agent that sends a reading to a tool (``to_tool``) or returns it in its output only."""

    def run() -> dict[str, Any]:
        at = reading()
        sent = at.isoformat() if isinstance(at, datetime) else at
        schedule("report", sent if to_tool else "tomorrow")
        return {"ok": True, "at": at}

    return run


def recorded(folder: Path, name: str, run: Callable[[], dict[str, Any]]) -> Path:
    bundle = folder / f"{name}.sftrace"
    with record("clock_forms", output=bundle, overwrite=True) as session:
        session.set_output(run())
    return bundle


def zone(name: str) -> None:
    os.environ["TZ"] = name
    time.tzset()


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time 5 hours behind UTC (the finding's machine), then this machine's zone back."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("new_york")
@pytest.mark.parametrize("kind", list(CHANGES))
def test_a_clock_reading_in_another_form_is_a_change_in_diff_and_replay(tmp_path: Path, kind: str) -> None:
    before, after = CHANGES[kind]
    for to_tool in (True, False):
        baseline = recorded(tmp_path, "a", agent(before, to_tool=to_tool))
        changed = recorded(tmp_path, "b", agent(after, to_tool=to_tool))
        result = diff_traces(baseline, changed)
        assert not result.equivalent, kind
        changes = {c.path for c in result.changes}
        assert "output.at" in changes, changes
        replayed = replay_entrypoint(baseline, agent(after, to_tool=to_tool))
        if to_tool:  # the tool's input differs: served nothing
            assert (replayed.matching.status, replayed.behavior.status) == ("DIVERGED", "NOT COMPARED"), kind
            assert "schedule" in (replayed.matching.message or ""), replayed.matching.message
        else:
            assert (replayed.behavior.status, replayed.behavior.path) == ("DIVERGED", "at"), kind


@pytest.mark.usefixtures("new_york")
@pytest.mark.parametrize("kind", list(SAME_FORMS))
def test_readings_of_one_form_stay_equivalent_and_matched(tmp_path: Path, kind: str) -> None:
    for to_tool in (True, False):
        run = agent(SAME_FORMS[kind], to_tool=to_tool)
        baseline = recorded(tmp_path, "a", run)
        for round_ in range(ROUNDS):
            again = recorded(tmp_path, f"a{round_}", run)
            result = diff_traces(baseline, again)
            assert result.equivalent, (kind, [str(c) for c in result.changes])
            replayed = replay_entrypoint(baseline, run)
            assert replayed.behavior.status == "MATCHED", (kind, replayed.behavior.message)


def local_aware() -> str:
    return datetime.now().astimezone().isoformat()


def test_an_aware_local_reading_recorded_in_one_zone_matches_in_another_unless_the_code_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", os.environ.get("TZ", "UTC"))  # restored after the test
    try:
        zone("Europe/Paris")  # a laptop at +01:00 records
        laptop = recorded(tmp_path, "laptop", agent(local_aware))
        utc_code = recorded(tmp_path, "utc", agent(lambda: datetime.now(UTC).isoformat()))
        zone("UTC")  # CI replays and diffs: the same code writes +00:00 there
        assert replay_entrypoint(laptop, agent(local_aware)).behavior.status == "MATCHED"
        assert diff_traces(laptop, recorded(tmp_path, "ci", agent(local_aware))).equivalent
        zone("Europe/Paris")  # the agent switched from UTC to local time: a change
        assert replay_entrypoint(utc_code, agent(local_aware)).matching.status == "DIVERGED"
        assert not diff_traces(utc_code, recorded(tmp_path, "local", agent(local_aware))).equivalent
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_naive_reading_and_an_aware_one_are_two_forms_whatever_the_zone() -> None:
    moment = datetime(2026, 12, 6, 16, 52, 49, 353238, tzinfo=UTC)
    aware, naive = clock_form(moment.isoformat()), clock_form(moment.replace(tzinfo=None).isoformat())
    assert aware == ClockForm("4-2-2T2:2:2+2:2", 0)
    assert naive == ClockForm("4-2-2T2:2:2", None)
    assert not same_clock_forms([aware], [naive], 0, 0)
    assert clock_form("1796575962") == ClockForm("10", None)
    assert clock_form("1796575962.5") == ClockForm("10.F", None)
    assert clock_form("20261206T165249+0100") == ClockForm("8T6+4", 3600)
    assert clock_form("req-1796575962") is None  # a whole reading only: the renaming finds the span


def test_two_offsets_are_one_form_only_where_each_is_its_own_runs_local_time() -> None:
    utc, plus_one = ClockForm("4-2-2T2:2:2+2:2", 0), ClockForm("4-2-2T2:2:2+2:2", 3600)
    # datetime.now().astimezone() on a laptop at +01:00, replayed in CI at UTC: the same code
    assert same_clock_forms([plus_one], [utc], 3600, 0)
    # an agent that switched from UTC to +01:00 (or whose zones say nothing) changed
    assert not same_clock_forms([utc], [plus_one], 0, 0)
    assert not same_clock_forms([utc], [plus_one])
    assert not same_clock_forms([utc], [])  # a reading on one side only


moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC) | st.none()
)
offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@given(moments, moments, st.sampled_from(["T", " "]))
def test_isoformat_has_one_form_whatever_its_fraction(a: datetime, b: datetime, sep: str) -> None:
    b = b.replace(tzinfo=a.tzinfo)
    for micro in (0, 1, 999999):  # isoformat drops a zero fraction
        assert clock_form(a.isoformat(sep)) == clock_form(b.replace(microsecond=micro).isoformat(sep))
    assert clock_form(a.isoformat(sep)) != clock_form(a.isoformat("T" if sep == " " else " "))


@given(moments, offsets, offsets)
def test_an_aware_reading_keeps_its_offset(a: datetime, zone: timezone, other: timezone) -> None:
    left = clock_form(a.replace(tzinfo=zone).isoformat())
    right = clock_form(a.replace(tzinfo=other).isoformat())
    assert left is not None
    assert right is not None
    assert left.shape == right.shape
    assert same_clock_forms([left], [right], 0, 0) == (zone == other)


@given(
    st.floats(min_value=1e9, max_value=9_999_999_999, allow_nan=False),
    st.floats(min_value=1e9, max_value=9_999_999_999, allow_nan=False),
)
def test_time_time_has_one_form_whatever_its_fraction_length(a: float, b: float) -> None:
    assert clock_form(repr(a)) == clock_form(repr(b)) == ClockForm("10.F", None)
    assert clock_form(str(int(a))) != clock_form(str(int(b * 1000)))
