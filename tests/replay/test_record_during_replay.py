"""A recording started while a replay runs in the process (NEWCOMER2 10; docs/decisions.md).

Inside the replay's context (the agent's own ``with record(...)`` around its run) the recording is inert and
its calls are served by the replay. Outside it (the entrypoint's module recording when it is imported, a
thread started without the context) nothing would serve its calls but the live dependencies, and it would
write over a bundle: it is refused, ``BoundaryContextError`` code ``record_during_replay``, before any body
runs or any file is written.
"""

from __future__ import annotations

import sys
import textwrap
import threading
from pathlib import Path

import pytest

from stepfork import ReplaySession, record, trace_tool
from stepfork.analysis import fork
from stepfork.replay import replay_entrypoint
from stepfork.replay.entrypoint import EntrypointImportExit
from stepfork.trace import BoundaryContextError, load_trace

BODY_RUNS: list[str] = []


@trace_tool
def order_status(order_id: str) -> dict[str, str]:
    BODY_RUNS.append(order_id)
    return {"order_id": order_id, "status": "shipped"}


def run_agent() -> dict[str, str]:
    return order_status("ORD-1")


def _recorded(tmp_path: Path) -> Path:
    bundle = tmp_path / "run.sftrace"
    with record("notify", output=bundle) as session:
        session.set_output(run_agent())
    BODY_RUNS.clear()
    return bundle


def test_a_recording_in_a_thread_without_the_replays_context_is_refused(tmp_path: Path) -> None:
    bundle = _recorded(tmp_path)
    out = tmp_path / "thread.sftrace"
    raised: list[BaseException] = []

    def worker() -> None:
        try:
            with record("worker", output=out):
                order_status("ORD-2")
        except BaseException as exc:
            raised.append(exc)

    with ReplaySession.from_trace(bundle) as replay:
        thread = threading.Thread(target=worker)  # no copy_context(): the replay is not in its context
        thread.start()
        thread.join()
        assert run_agent() == {"order_id": "ORD-1", "status": "shipped"}
        replay.verify_complete()
    assert len(raised) == 1
    error = raised[0]
    assert isinstance(error, BoundaryContextError)
    assert error.code == "record_during_replay"
    assert "thread.sftrace" in str(error)
    assert BODY_RUNS == []  # nothing ran live
    assert not out.exists()


def test_a_recording_inside_the_replays_context_is_inert_and_served(tmp_path: Path) -> None:
    bundle = _recorded(tmp_path)
    out = tmp_path / "inner.sftrace"
    with ReplaySession.from_trace(bundle) as replay:
        with record("notify", output=out, overwrite=True) as inner:
            result = run_agent()
        replay.verify_complete()
    assert result == {"order_id": "ORD-1", "status": "shipped"}
    assert inner.inert
    assert BODY_RUNS == []
    assert not out.exists()


def test_a_recording_outside_any_replay_records(tmp_path: Path) -> None:
    _recorded(tmp_path)  # a replay session that ended leaves nothing behind
    with ReplaySession.from_trace(tmp_path / "run.sftrace") as replay:
        run_agent()
        replay.verify_complete()
    out = tmp_path / "after.sftrace"
    with record("notify", output=out):
        run_agent()
    assert BODY_RUNS == ["ORD-1"]
    assert load_trace(out).status == "completed"


AGENT = textwrap.dedent(
    """
    from pathlib import Path

    from stepfork import record, trace_tool

    SIDE_EFFECTS = Path(__file__).with_name("side_effects.log")


    @trace_tool
    def order_status(order_id: str) -> dict:
        with SIDE_EFFECTS.open("a") as log:
            log.write(order_id + "\\n")
        return {"order_id": order_id, "status": "shipped"}


    def run_agent() -> dict:
        return order_status("ORD-1001")


    with record("notify-agent", output=str(Path(__file__).with_name("failure.sftrace")), overwrite=True) as s:
        s.set_output(run_agent())
    """
)


@pytest.fixture
def script_module(tmp_path: Path) -> Path:
    """A module that records a run when imported (no ``__main__`` guard), imported once to record."""
    (tmp_path / "rec_at_import.py").write_text(AGENT, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        __import__("rec_at_import")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("rec_at_import", None)
    (tmp_path / "side_effects.log").unlink()
    return tmp_path


def test_replaying_a_module_that_records_when_imported_is_refused_before_anything_runs(
    script_module: Path,
) -> None:
    bundle = script_module / "failure.sftrace"
    before = (bundle / "events.jsonl").read_bytes(), load_trace(bundle).run_id
    try:
        with pytest.raises(EntrypointImportExit) as raised:
            replay_entrypoint(bundle, "rec_at_import:run_agent", import_root=script_module)
    finally:
        sys.modules.pop("rec_at_import", None)
    assert raised.value.code == "import_failed"
    assert "record('notify-agent') refused" in str(raised.value)
    assert "if __name__ ==" in str(raised.value)
    assert not (script_module / "side_effects.log").exists()  # the tool never ran live
    assert ((bundle / "events.jsonl").read_bytes(), load_trace(bundle).run_id) == before


def test_an_agent_that_records_itself_is_inert_under_fork(tmp_path: Path) -> None:
    bundle = _recorded(tmp_path)
    inner = tmp_path / "inner.sftrace"

    def recording_agent() -> dict[str, str]:
        with record("notify", output=inner) as session:  # the production agent records every run
            result = run_agent()
            session.set_output(result)
        return result

    result = fork(bundle, step=3, entrypoint=recording_agent, output=tmp_path / "forked.sftrace")
    assert result.status == "completed", result.error
    assert BODY_RUNS == []  # the call before the fork point was served from the recording
    assert not inner.exists()
