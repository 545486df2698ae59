"""An equal clock number or drawn number binds to itself in the renaming of fresh values, as an equal string
does (docs/diff.md "Clock readings taken by the run"; stepfork.replay.noise.compare).

A run output ``{"started": t, "ended": t}`` holds one epoch reading in two places. Two runs of that code
rename ``t`` into their own reading: EQUIVALENT, MATCHED. But where the other run holds the same ``t`` in
one place and another reading in the other (``{"started": t, "ended": t + 1}``: code that reads the clock
twice now), the values that were one are two: a change. Before, an equal number bound nothing, so ``t``
renamed into ``t + 1`` at the other place (EQUIVALENT, MATCHED); the same values as strings were already a
change. Equal values on both sides happen whenever the runs' windows overlap: two recordings made within
a couple of seconds (CI jobs in parallel), a replay just after its recording. The same holds for a 6-digit
code drawn from the system's randomness and sent as a number.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint
from stepfork.replay.noise import Comparison, NoiseRules, Origins
from stepfork.replay.noise.clock import ClockWindow
from stepfork.trace import record, trace_tool


@trace_tool
def open_job(kind: str) -> dict[str, str]:
    return {"kind": kind, "status": "open"}


def job_agent(started: Any, ended: Any) -> dict[str, Any]:
    """The agent returns when its job started and ended (epoch readings, or their text)."""
    return {"job": open_job("export")["status"], "started": started, "ended": ended}


def recorded(tmp_path: Path, name: str, started: Any, ended: Any) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("jobs", output=bundle) as session:
        session.set_output(job_agent(started, ended))
    return bundle


FORMS = {"seconds": lambda t: t, "milliseconds": lambda t: t * 1000 + 417, "text": str}


@pytest.mark.parametrize("form", list(FORMS))
def test_one_reading_held_twice_and_two_readings_in_its_places_is_a_change(tmp_path: Path, form: str) -> None:
    shape = FORMS[form]
    now = int(time.time())
    base = recorded(tmp_path, "base", shape(now), shape(now))
    # the same code in a run whose window overlaps: its own reading, held twice, renames
    assert diff_traces(base, recorded(tmp_path, "same", shape(now + 1), shape(now + 1))).equivalent
    # the same reading at one place and another reading at the other: two readings where there was one
    split = diff_traces(base, recorded(tmp_path, "split", shape(now), shape(now + 1)))
    assert not split.equivalent, split.changes
    assert [c.path for c in split.changes] == ["output.started"]
    # and the other way round: two readings that became one
    merged = diff_traces(recorded(tmp_path, "two", shape(now), shape(now + 1)), base)
    assert not merged.equivalent, merged.changes


@pytest.mark.parametrize("form", list(FORMS))
def test_a_replay_holding_the_recorded_reading_at_one_place_and_another_at_the_other_diverges(
    tmp_path: Path, form: str
) -> None:
    shape = FORMS[form]
    now = int(time.time())
    bundle = recorded(tmp_path, "base", shape(now), shape(now))
    same = replay_entrypoint(bundle, lambda: job_agent(shape(now + 1), shape(now + 1)))
    assert same.behavior.status == "MATCHED", same.behavior.message
    split = replay_entrypoint(bundle, lambda: job_agent(shape(now), shape(now + 1)))
    assert split.behavior.status == "DIVERGED", split.behavior.message


def code_agent(split: bool = False) -> dict[str, Any]:
    code = secrets.randbelow(900000) + 100000
    shown = secrets.randbelow(900000) + 100000 if split else code  # split: a second draw where it was one
    return {"job": open_job("otp")["status"], "sent": code, "shown": shown}


def test_a_drawn_number_held_twice_binds_to_itself_too(tmp_path: Path) -> None:
    bundle = tmp_path / "codes.sftrace"
    with record("codes", output=bundle) as session:
        session.set_output(code_agent())
    assert replay_entrypoint(bundle, code_agent).behavior.status == "MATCHED"
    assert replay_entrypoint(bundle, lambda: code_agent(split=True)).behavior.status == "DIVERGED"


def test_an_equal_provider_time_at_a_noise_place_stays_noise_after_its_reading_was_renamed() -> None:
    """Two responses' ``created`` seconds, ``t`` then ``t + 1`` in one recording and ``t + 1`` twice in the
    other (two responses within one second): the first pair renames ``t`` into ``t + 1``, and the equal
    ``t + 1`` after it, which cannot bind to itself any more, is still the provider's timing field."""
    now = int(time.time())
    window = ClockWindow((now - 5) * 10**9, (now + 5) * 10**9)
    scope = Comparison(NoiseRules.shipped(), Origins(clock=window), Origins(clock=window))

    def response(created: int, fresh: str) -> dict[str, Any]:
        return {"id": f"chatcmpl-{fresh}", "object": "chat.completion", "created": created, "model": "gpt-4o"}

    first = scope.compare(response(now, "AbC1"), response(now + 1, "XyZ1"), "llm_output")
    assert [d.path for d in first] == [("created",), ("id",)]
    assert all(d.noise is not None for d in first)  # the provider rule's places
    second = scope.compare(response(now + 1, "AbC2"), response(now + 1, "XyZ2"), "llm_output")
    assert all(d.noise is not None for d in second), second
    # outside a noise place the same equal number is a difference: it was renamed to another
    assert [d.noise for d in scope.compare({"at": now, "n": 1}, {"at": now, "n": 2}, "run_output")] == [
        None,
        None,
    ]
