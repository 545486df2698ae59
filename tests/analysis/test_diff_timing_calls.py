"""A call of the agent's own that a run ended during (work it started and did not wait for) is timing, not
behaviour: two runs of the same code, one where the call returned before the end and one where it did not
(recorded as ``UnfinishedCallError``), diff EQUIVALENT; a run that ended before even making it, too. A
changed input of that call is still a change, and ``strict`` compares everything (docs/diff.md, "Calls on
their own clock")."""

from __future__ import annotations

import contextvars
import threading
from pathlib import Path
from typing import Any

from stepfork.analysis.diff import diff_traces
from stepfork.trace import record, trace_tool

release = threading.Event()
entered = threading.Event()  # warm_cache's body runs: its call event is written


@trace_tool
def lookup(city: str) -> dict[str, Any]:
    return {"city": city, "temp": 21}


@trace_tool
def warm_cache(region: str) -> dict[str, str]:
    entered.set()
    release.wait()
    return {"region": region, "state": "warm"}


def run(out: Path, *, region: str | None = "eu", finishes: bool = True) -> Path:
    """An agent that starts a cache warm-up in a thread (with its context) and does not wait for it."""
    release.clear()
    entered.clear()
    if finishes:
        release.set()
    worker = None
    with record("agent", output=out) as session:
        if region is not None:
            started = threading.Event()

            def warm() -> None:
                started.set()
                warm_cache(region)

            worker = threading.Thread(target=contextvars.copy_context().run, args=(warm,), daemon=True)
            worker.start()
            started.wait()
            if finishes:
                worker.join()
        answer = lookup("Paris")
        session.set_output(f"{answer['city']}: {answer['temp']}")
        if region is not None and not finishes:
            entered.wait()  # running when the run ends
    release.set()
    if worker is not None:
        worker.join()
    return out


def test_a_call_the_run_ended_during_is_not_compared_with_the_same_call_that_returned(tmp_path: Path) -> None:
    finished = run(tmp_path / "finished.sftrace")
    ended = run(tmp_path / "ended.sftrace", finishes=False)
    result = diff_traces(finished, ended)
    assert result.equivalent, str(result)
    assert result.not_compared == 2  # the call cut short and its counterpart
    assert "Not compared: 2 call(s) on their own clock" in str(result)
    assert not diff_traces(finished, ended, strict=True).equivalent


def test_a_run_that_ended_before_making_the_call_is_no_change(tmp_path: Path) -> None:
    ended = run(tmp_path / "ended.sftrace", finishes=False)
    never = run(tmp_path / "never.sftrace", region=None)
    result = diff_traces(ended, never)
    assert result.equivalent, str(result)
    assert result.not_compared == 1


def test_the_same_call_with_another_input_is_still_a_change(tmp_path: Path) -> None:
    finished = run(tmp_path / "finished.sftrace")
    other = run(tmp_path / "other.sftrace", region="us", finishes=False)
    result = diff_traces(finished, other)
    assert not result.equivalent
    assert any(step.label == "warm_cache" for step in result.steps if step.kind != "unchanged"), str(result)
