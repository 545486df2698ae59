"""Issue 12: a LangGraph human-in-the-loop run resumed with ``graph.invoke(Command(resume=...), config)``.

The resumed run records the ``Command`` as its ``run_input`` (redacted, in the dataclass tag of
docs/values.md), the entrypoint gets a ``Command`` back, and the resume value is an input of the tool that
called ``interrupt()`` (``"$resume"``): replaying with the recorded input resumes identically, and a changed
answer is a divergence at that tool and path, and a change in ``diff``. In-process, real LangGraph.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from stepfork.analysis import diff_traces
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.replay.entrypoint import entrypoint_arguments, recorded_run_input
from stepfork.replay.outcome import replay_entrypoint
from stepfork.trace import Trace

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RESUME_TYPE_PATH = '$["$resume"][0].type'


@pytest.fixture(scope="module")
def hitl() -> Any:
    sys.path.insert(0, str(EXAMPLES / "langgraph_hitl"))
    try:
        import hitl_agent
    finally:
        sys.path.pop(0)
    return hitl_agent


def _events(path: Path, kind: str) -> list[Any]:
    return [e for e in Trace.load(path).events if e.type == kind]


def test_the_resumed_run_records_its_command_as_the_run_input_redacted(hitl: Any, tmp_path: Path) -> None:
    path = tmp_path / "resumed.sftrace"
    decision = {"type": "accept", "api_key": "sk-proj-abcdefghijklmnopqrstuvwxyz012345"}
    hitl.record_resumed_run(str(path), decision)
    run_input = recorded_run_input(Trace.load(path))
    assert run_input["$stepfork"] == "dataclass"
    assert run_input["type"] == "Command"
    fields = run_input["value"]
    assert fields["resume"]["type"] == "accept"
    assert "sk-proj" not in str(run_input)  # redacted like any input
    assert fields["graph"] is None
    assert fields["update"] is None
    # the tool that called interrupt() recorded the answer as its input, redacted too
    (call,) = _events(path, "tool_call")
    assert call.name == "book_hotel"
    assert call.input["hotel_name"] == "Hotel Lutetia"
    assert call.input["$resume"][0]["type"] == "accept"
    assert "sk-proj" not in str(call.input)


def test_a_command_parameter_gets_the_recorded_command_back(hitl: Any, tmp_path: Path) -> None:
    path = tmp_path / "resumed.sftrace"
    hitl.record_resumed_run(str(path))
    args, kwargs = entrypoint_arguments(hitl.resume_agent, recorded_run_input(Trace.load(path)))
    assert kwargs == {}
    (command,) = args
    assert isinstance(command, Command)
    assert command.resume == {"type": "accept"}
    assert command.goto == ()


def test_replaying_the_resumed_run_with_its_recorded_input_resumes_identically(
    hitl: Any, tmp_path: Path
) -> None:
    path = tmp_path / "resumed.sftrace"
    recorded = hitl.record_resumed_run(str(path))
    outcome = replay_entrypoint(path, hitl.resume_agent)
    assert outcome.exit_code == 0, outcome
    assert outcome.behavior.status == "MATCHED"
    with ReplaySession.from_trace(path) as session:
        replayed = hitl.resume_agent(Command(resume={"type": "accept"}))
    session.verify_complete()
    assert (
        replayed
        == recorded
        == {
            "tool": ["Booked a stay at Hotel Lutetia."],
            "answer": "Done: the Hotel Lutetia is booked.",
        }
    )


def test_a_changed_resume_value_diverges_at_the_tool_that_receives_it(hitl: Any, tmp_path: Path) -> None:
    path = tmp_path / "resumed.sftrace"
    hitl.record_resumed_run(str(path))
    with pytest.raises(ReplayMismatchError) as caught, ReplaySession.from_trace(path):
        hitl.resume_agent(Command(resume={"type": "reject"}))
    error = caught.value
    assert error.code == "input_diverged"
    assert error.diagnostic is not None
    assert error.diagnostic.expected_label == "book_hotel"
    assert error.diagnostic.difference is not None
    assert error.diagnostic.difference.path == RESUME_TYPE_PATH
    assert "reject" in str(error)
    assert "accept" in str(error)


def test_the_whole_conversation_records_the_answer_on_the_resumed_tool_call(
    hitl: Any, tmp_path: Path
) -> None:
    path = tmp_path / "run.sftrace"
    hitl.record_run(str(path))
    first, second = _events(path, "tool_call")
    assert "$resume" not in first.input  # the call that paused had no answer yet
    assert second.input["$resume"] == [{"type": "accept"}]
    with ReplaySession.from_trace(path), pytest.raises(ReplayMismatchError) as caught:
        hitl.run_agent(decision={"type": "reject"})
    assert caught.value.diagnostic is not None
    assert caught.value.diagnostic.index == 2  # call #3: the resumed book_hotel, after the model's turn


def test_diff_shows_a_changed_resume_value_at_the_tool_input(hitl: Any, tmp_path: Path) -> None:
    hitl.record_resumed_run(str(tmp_path / "a.sftrace"))
    hitl.record_resumed_run(str(tmp_path / "b.sftrace"))
    hitl.record_resumed_run(str(tmp_path / "c.sftrace"), {"type": "reject"})
    a, b, c = (Trace.load(tmp_path / f"{n}.sftrace") for n in "abc")
    assert diff_traces(a, b).equivalent
    changed = diff_traces(a, c)
    assert not changed.equivalent
    paths = [(s.label, ch.path) for s in changed.steps if s.kind == "changed" for ch in s.changes]
    assert ("book_hotel", "input.$resume[0].type") in paths
