"""Recorded failure types (issue 32): Stepfork writes the name Python's traceback prints (``ValueError`` for a
builtin, as the format documents and the earlier bundles say; ``module.Qualname`` for an application's
class; a script's class without ``__main__``), and reads both forms: a bundle written before with
``builtins.ValueError`` still reproduces and still matches ``raise_as``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stepfork import FailureInfo, RecordedDependencyError, ReplaySession, Trace, record, trace_tool
from stepfork.replay.outcome import replay_entrypoint
from stepfork.trace import ErrorEvent, RunEnd, RunStart, RunStatus, ToolCall, ToolResult
from stepfork.trace.models import EventStatus


class QuotaExceeded(Exception):
    """An application's own failure type."""


@trace_tool
def fetch(city: str) -> dict:
    raise ValueError(f"no data for {city}")


@trace_tool
def charge(amount: int) -> dict:
    raise QuotaExceeded("quota exceeded")


def _events(bundle: Path) -> list[dict]:
    return [json.loads(line) for line in (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_builtin_failure_is_written_with_its_class_name(tmp_path: Path) -> None:
    bundle = tmp_path / "run.sftrace"
    with pytest.raises(ValueError, match="no data"), record("weather", output=bundle):
        fetch("Paris")
    events = _events(bundle)
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["output"] == {"error_type": "ValueError", "message": "no data for Paris"}
    assert [e["error_type"] for e in events if e["type"] == "error"] == ["ValueError", "ValueError"]
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["failure"]["type"] == "ValueError"


def test_an_application_failure_keeps_its_module(tmp_path: Path) -> None:
    bundle = tmp_path / "run.sftrace"
    with pytest.raises(QuotaExceeded), record("billing", output=bundle):
        charge(3)
    qualified = f"{QuotaExceeded.__module__}.QuotaExceeded"
    assert next(e for e in _events(bundle) if e["type"] == "tool_result")["output"]["error_type"] == qualified
    with ReplaySession.from_trace(bundle), pytest.raises(RecordedDependencyError) as info:
        charge(3)
    assert (info.value.error_type, info.value.short_type) == (qualified, "QuotaExceeded")


SCRIPT = """
import sys
from stepfork import record, trace_tool


class Refused(Exception):
    pass


@trace_tool
def book(seat: str) -> dict:
    raise Refused("no seat " + seat)


try:
    with record("script", output=sys.argv[1]):
        book("12A")
except Refused:
    pass
"""


def test_a_class_of_a_script_run_as_main_is_written_without_main(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    bundle = tmp_path / "run.sftrace"
    subprocess.run([sys.executable, "script.py", str(bundle)], cwd=tmp_path, check=True)
    assert next(e for e in _events(bundle) if e["type"] == "tool_result")["output"]["error_type"] == "Refused"


def _earlier_bundle(directory: Path, error_type: str) -> Path:
    """A failed run as Stepfork wrote it before issue 32 (``builtins.ValueError``) or as the earlier
    implementation did (``ValueError``): a tool that failed, and the run failing with it."""
    trace = Trace(agent_name="weather")
    start = trace.add(RunStart())
    call = trace.add(ToolCall(name="fetch", input={"city": "Paris"}, parent_id=start.id))
    output = {"error_type": error_type, "message": "no data for Paris"}
    result = trace.add(ToolResult(name="fetch", output=output, status=EventStatus.ERROR, parent_id=call.id))
    error = trace.add(ErrorEvent(error_type=error_type, message="no data for Paris", parent_id=result.id))
    trace.add(RunEnd(run_status=RunStatus.FAILED, parent_id=error.id))
    failure = FailureInfo(type=error_type, message="no data for Paris", step=3)
    return trace.save(directory / "run.sftrace", status=RunStatus.FAILED, failure=failure)


def _agent() -> dict:
    return fetch("Paris")


@pytest.mark.parametrize("error_type", ["builtins.ValueError", "ValueError"])
def test_both_forms_reproduce_the_recorded_failure(tmp_path: Path, error_type: str) -> None:
    bundle = _earlier_bundle(tmp_path, error_type)
    outcome = replay_entrypoint(bundle, _agent)
    assert (outcome.behavior.status, outcome.exit_code) == ("REPRODUCED FAILURE", 0)


@pytest.mark.parametrize("error_type", ["builtins.ValueError", "ValueError"])
def test_both_forms_match_a_raise_as_key(tmp_path: Path, error_type: str) -> None:
    bundle = _earlier_bundle(tmp_path, error_type)
    with ReplaySession.from_trace(bundle, raise_as={"ValueError": KeyError}) as replay:
        with pytest.raises(KeyError):
            fetch("Paris")
        replay.verify_complete()
