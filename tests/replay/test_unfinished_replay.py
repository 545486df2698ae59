"""Replaying a call the recorded run ended before (the recorder's ``UnfinishedCallError`` outcome): the
caller is held until the replay's run ends and then gets that failure, as while recorded it got nothing
before the end; a replay that ends before reaching the call is not missing it (docs/recording.md, "Calls
still running when the run ends")."""

from __future__ import annotations

import contextvars
import threading
from pathlib import Path
from typing import Any

import pytest

from stepfork.replay import RecordedDependencyError, ReplaySession
from stepfork.trace import record, trace_tool

gate = threading.Event()
started = threading.Event()  # the tool's body runs (while recorded)
calling = threading.Event()  # the thread is about to call the tool


@trace_tool
def lookup(city: str) -> dict[str, Any]:
    return {"city": city, "temp": 21}


@trace_tool
def fetch_flags(url: str) -> dict[str, bool]:
    started.set()
    gate.wait()
    return {"beta": True}


def agent(got: list[Any], *, background: bool = True) -> tuple[str, threading.Thread | None]:
    """An agent that starts a flag fetch in a daemon thread (with its context) and does not wait for it."""
    worker = None
    if background:

        def fetch() -> None:
            calling.set()
            try:
                got.append(fetch_flags("/flags"))
            except BaseException as exc:
                got.append(exc)

        worker = threading.Thread(target=contextvars.copy_context().run, args=(fetch,), daemon=True)
        worker.start()
        calling.wait()
    answer = lookup("Paris")
    return f"{answer['city']}: {answer['temp']}", worker


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    for event in (gate, started, calling):
        event.clear()
    out = tmp_path / "run.sftrace"
    got: list[Any] = []
    with record("agent", output=out) as session:
        output, worker = agent(got)
        started.wait()  # the call is running when the run ends
        session.set_output(output)
    gate.set()
    assert worker is not None
    worker.join()
    assert got == [{"beta": True}]
    calling.clear()
    return out


def test_the_unfinished_call_is_held_until_the_run_ends_then_raises_its_failure(bundle: Path) -> None:
    got: list[Any] = []
    with ReplaySession.from_trace(bundle) as session:
        output, worker = agent(got)
        assert worker is not None
        worker.join(timeout=0.5)
        assert worker.is_alive()
        assert got == []
        assert output == "Paris: 21"
    worker.join()
    assert len(got) == 1
    assert isinstance(got[0], RecordedDependencyError)
    assert got[0].error_type == "stepfork.trace.errors.UnfinishedCallError"
    assert "the run ended before this call returned" in str(got[0])
    assert session.divergence is None
    session.verify_complete()


def test_a_replay_that_ends_before_reaching_the_unfinished_call_is_complete(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle) as session:
        output, _ = agent([], background=False)
    assert output == "Paris: 21"
    session.verify_complete()  # the call in flight at the recorded end need not start again
    assert session.divergence is None


def test_each_thread_reads_the_recorded_call_it_was_served(tmp_path: Path) -> None:
    """``served_here``: what a caller reads its served call's recorded outcome from (fork's token counts)
    when another thread's call was served in between."""
    out = tmp_path / "two.sftrace"
    with record("agent", output=out):
        lookup("Oslo")
        lookup("Lima")
    first_served, second_served = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def first() -> None:
        lookup("Oslo")
        first_served.set()
        second_served.wait()  # the other thread's call is served between this call and the read below
        seen["first"] = session.served_here

    def second() -> None:
        first_served.wait()
        lookup("Lima")
        seen["second"] = session.served_here
        second_served.set()

    with ReplaySession.from_trace(out) as session:
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(function,))  # a copy each
            for function in (first, second)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert session.served_here is None  # this thread was served nothing
    assert seen["first"].input == {"city": "Oslo"}
    assert seen["second"].input == {"city": "Lima"}
