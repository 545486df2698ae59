"""A recorded failure of a Python builtin type is raised as that builtin too (NEWCOMER3 finding 3; C8).

Unchanged code replayed DIVERGED whenever the agent used the text of a recorded tool failure: the everyday
``except Exception as e: return {"error": str(e)}``, LangGraph's ``ToolNode(handle_tool_errors=True)``
(``repr(e)`` into the next request), or ``except ValueError``, which RecordedDependencyError never matched.
A failure of a builtin type that no ``raise_as`` entry covers is now an instance of that builtin combined
with RecordedDependencyError: ``str()`` the recorded message, ``repr()`` as Python writes it, caught by
``except ValueError`` and by ``except RecordedDependencyError`` alike (docs/replay.md). Another type keeps
being a RecordedDependencyError (nothing named by a bundle is imported). LangGraph's story through the real
CLI: tests/integrations/test_langgraph_tool_errors.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepfork.replay import RecordedDependencyError, ReplaySession
from stepfork.replay.outcome import replay_entrypoint
from stepfork.trace import record, trace_tool


class OutOfStock(Exception):
    """An application's own exception type (not a builtin)."""


FAILURES: dict[str, BaseException] = {
    "value": ValueError("no data for Atlantis"),
    "timeout": TimeoutError("weather service timed out"),
    "connection": ConnectionResetError(104, "Connection reset by peer"),
    "custom": OutOfStock("sold out"),
}


@trace_tool
def get_weather(city: str, failure: str) -> str:
    raise FAILURES[failure]


def text_agent(failure: str) -> dict[str, Any]:
    """What agents do with a tool's error: hand its text back (to the user or the model)."""
    try:
        return {"ok": get_weather("Atlantis", failure)}
    except Exception as e:
        return {"error": str(e), "repr": repr(e), "type": type(e).__name__}


def typed_agent(failure: str) -> str:
    """An agent that catches the builtin type it expects."""
    try:
        return get_weather("Atlantis", failure)
    except (ValueError, TimeoutError, ConnectionError) as e:
        return f"retry later ({e})"


def recorded(tmp_path: Path, agent: Any, failure: str) -> tuple[Path, Any]:
    path = tmp_path / f"{agent.__name__}-{failure}.sftrace"
    with record(agent.__name__, output=path, run_input={"failure": failure}) as session:
        result = agent(failure)
        session.set_output(result)
    return path, result


@pytest.mark.parametrize(
    ("agent", "failure"),
    [
        (text_agent, "value"),
        (text_agent, "timeout"),
        (typed_agent, "value"),
        (typed_agent, "timeout"),
        (typed_agent, "connection"),  # its str(); its repr() holds args the recording does not keep
    ],
)
def test_unchanged_code_using_a_builtin_failure_replays_matched(
    tmp_path: Path, agent: Any, failure: str
) -> None:
    path, _ = recorded(tmp_path, agent, failure)
    outcome = replay_entrypoint(path, agent)
    assert outcome.behavior.status == "MATCHED", outcome.behavior
    assert outcome.exit_code == 0


def test_the_raised_exception_is_the_builtin_and_a_recorded_dependency_error(tmp_path: Path) -> None:
    path, live = recorded(tmp_path, text_agent, "value")
    with ReplaySession.from_trace(path) as replay, pytest.raises(ValueError) as caught:
        get_weather("Atlantis", "value")
    error = caught.value
    assert str(error) == "no data for Atlantis" == live["error"]
    assert isinstance(error, RecordedDependencyError)
    assert repr(error) == "ValueError('no data for Atlantis')" == live["repr"]
    assert (error.error_type, error.name, error.kind) == ("ValueError", "get_weather", "tool")
    assert replay.divergence is None


def test_another_type_stays_a_recorded_dependency_error_and_its_text_diverges(tmp_path: Path) -> None:
    # OutOfStock is the application's: replay never imports it; `raise_as` is the way (docs/replay.md)
    path, _ = recorded(tmp_path, text_agent, "custom")
    outcome = replay_entrypoint(path, text_agent)
    assert outcome.behavior.status == "DIVERGED"
    with ReplaySession.from_trace(path), pytest.raises(RecordedDependencyError) as caught:
        get_weather("Atlantis", "custom")
    assert type(caught.value) is RecordedDependencyError
    assert str(caught.value).startswith("recorded tool failure for 'get_weather': ")
    matched = replay_entrypoint(path, text_agent, raise_as={"OutOfStock": OutOfStock})
    assert matched.behavior.status == "MATCHED"
