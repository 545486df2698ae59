"""A call reaching a replay session after it ended is refused without changing its verdict.

A background thread (a feature-flag poller, an SDK's health check) can fetch the only active session and
call it just as the run ends: the session is no longer active when its check runs. It was counted as the
run's divergence (``the ReplaySession is not active``), so a program with a poller replayed DIVERGED now and
then under load (tests/integrations/test_background_poller.py, seen 2026-12-06). A session used without
``with`` still diverges on its first call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepfork.replay import ReplayError, ReplaySession
from stepfork.trace import BoundaryCall, OrphanCallWarning, record, trace_tool


@trace_tool
def lookup(key: str) -> str:
    return f"value-{key}"


def test_a_call_after_the_session_ended_is_refused_and_not_a_divergence(tmp_path: Path) -> None:
    path = tmp_path / "late.sftrace"
    with record("late", output=path):
        lookup("a")
    session = ReplaySession.from_trace(path)
    with session:
        assert lookup("a") == "value-a"
    late = BoundaryCall(kind="tool", name="lookup", input={"key": "b"})
    with pytest.warns(OrphanCallWarning), pytest.raises(ReplayError) as refused:
        session.handle(late, lambda: "ran", orphan=True)  # what a poller holding the session does
    assert refused.value.code == "not_active"
    assert session.divergence is None
    assert session.divergence_count == 0
    session.verify_complete()


def test_a_session_never_entered_diverges_on_its_first_call(tmp_path: Path) -> None:
    path = tmp_path / "unused.sftrace"
    with record("unused", output=path):
        lookup("a")
    session = ReplaySession.from_trace(path)
    with pytest.raises(ReplayError):
        session.handle(BoundaryCall(kind="tool", name="lookup", input={"key": "a"}), lambda: "ran")
    assert session.divergence is not None
    assert session.divergence.code == "not_active"
