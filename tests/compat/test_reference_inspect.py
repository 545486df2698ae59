"""``stepfork.inspect`` (issue 32): a bundle's inspection as a library API, the earlier implementation's
``inspect_bundle`` / ``TraceInspection`` / ``filter_timeline`` at their paths, and the one
``stepfork inspect`` renders. Written from interop/REFERENCE-API.md section 8 and REFERENCE-NOTES.md
("``inspect --json`` emits a TraceInspection: summary fields plus a ``timeline``")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stepfork import FailureInfo, ToolCall, Trace
from stepfork.trace import ErrorEvent, EventStatus, RunEnd, RunStart, RunStatus, ToolResult

from ..e2e.conftest import run_cli

SECRET = "sk-inspectsecret1234567890abcd"


def _failed(directory: Path, secret: str = SECRET) -> Path:
    trace = Trace(agent_name="booking-agent")
    start = trace.add(RunStart(input={"prompt": "book"}))
    arguments = {"q": "KTM", "api_key": secret}
    call = trace.add(ToolCall(name="flight_search", input=arguments, parent_id=start.id))
    result = trace.add(
        ToolResult(name="flight_search", output={"ok": False}, status=EventStatus.ERROR, parent_id=call.id)
    )
    message = f"failed with {secret}"
    error = trace.add(ErrorEvent(error_type="ToolError", message=message, parent_id=result.id))
    trace.add(RunEnd(run_status=RunStatus.FAILED, parent_id=error.id))
    failure = FailureInfo(type="ToolError", message="failed", step=3)
    return trace.save(directory / "failed.sftrace", status=RunStatus.FAILED, failure=failure)


def test_inspect_bundle_summarizes_a_failed_run(tmp_path: Path) -> None:
    from stepfork.inspect import inspect_bundle

    found = inspect_bundle(_failed(tmp_path))
    summary = (found.agent_name, found.status, found.events, found.tool_calls)
    assert summary == ("booking-agent", "failed", 5, 1)
    assert found.integrity == "verified"
    assert found.failure == {"type": "ToolError", "message": "failed", "step": 3}
    assert found.path == str(tmp_path / "failed.sftrace")
    types = ["run_start", "tool_call", "tool_result", "error", "run_end"]
    assert [row.type for row in found.timeline] == types
    assert [row.label for row in found.timeline][1:4] == ["flight_search", "flight_search", "ToolError"]


def test_filter_timeline_keeps_errors_or_one_step(tmp_path: Path) -> None:
    from stepfork.inspect import filter_timeline, inspect_bundle

    found = inspect_bundle(_failed(tmp_path))
    assert [row.type for row in filter_timeline(found, errors_only=True).timeline] == ["tool_result", "error"]
    at_step = filter_timeline(found, step=1).timeline
    assert [(row.step, row.label) for row in at_step] == [(1, "flight_search")]
    assert found.events == filter_timeline(found, step=99).events == 5  # the summary is kept
    assert filter_timeline(found, step=99).timeline == []


def test_the_model_dumps_json_without_secrets(tmp_path: Path) -> None:
    from stepfork.inspect import inspect_bundle

    bundle = _failed(tmp_path)
    lines = (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[1])
    event["input"]["note"] = f"legacy carried {SECRET}"  # a bundle an older writer left a secret in
    lines[1] = json.dumps(event)
    (bundle / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = inspect_bundle(bundle).model_dump_json()
    assert SECRET not in text
    payload = json.loads(text)
    assert payload["agent_name"] == "booking-agent"
    assert payload["timeline"][1]["type"] == "tool_call"
    assert payload["integrity"] == "mismatch"  # the edit is seen, and still inspected


def test_inspection_changes_nothing_on_disk(tmp_path: Path) -> None:
    from stepfork.inspect import inspect_bundle

    bundle = _failed(tmp_path)
    before = {item.name: item.read_bytes() for item in bundle.iterdir()}
    inspect_bundle(bundle)
    assert {item.name: item.read_bytes() for item in bundle.iterdir()} == before


def test_an_empty_trace_inspects(tmp_path: Path) -> None:
    from stepfork.inspect import inspect_bundle

    found = inspect_bundle(Trace(agent_name="demo-agent").save(tmp_path / "empty.sftrace"))
    assert (found.events, found.timeline, found.ended_at) == (0, [], None)


def test_an_unreadable_bundle_raises_trace_storage_error(tmp_path: Path) -> None:
    from stepfork.inspect import inspect_bundle
    from stepfork.trace import TraceStorageError

    with pytest.raises(TraceStorageError):
        inspect_bundle(tmp_path / "missing.sftrace")


def test_inspect_trace_and_the_earlier_paths(tmp_path: Path) -> None:
    import stepfork.analysis
    import stepfork.inspect
    from stepfork.inspect.inspector import filter_timeline, inspect_bundle, inspect_trace
    from stepfork.inspect.models import EventSummary, TraceInspection

    assert inspect_bundle is stepfork.inspect.inspect_bundle is stepfork.analysis.inspect_bundle
    assert filter_timeline is stepfork.inspect.filter_timeline
    assert TraceInspection is stepfork.inspect.TraceInspection is stepfork.analysis.TraceInspection
    assert EventSummary is stepfork.inspect.EventSummary
    trace = Trace.load(_failed(tmp_path))
    found = inspect_trace(trace, path="memory")
    assert isinstance(found, TraceInspection)
    assert (found.path, found.integrity, found.events) == ("memory", "not_checked", 5)
    assert isinstance(found.timeline[0], EventSummary)


def test_the_cli_renders_the_library(tmp_path: Path) -> None:
    from stepfork.inspect import inspect_bundle

    bundle = _failed(tmp_path)
    shown = run_cli("inspect", bundle, "--json")
    assert shown.code == 0, shown.text
    data = json.loads(shown.out)
    model = json.loads(inspect_bundle(bundle).model_dump_json())
    assert data["timeline"] == model["timeline"]
    assert data["integrity"] == "VERIFIED"  # the spec's label; the model keeps the IntegrityStatus value
    model.pop("path")
    data.pop("integrity")
    model.pop("integrity")
    assert data == model


def test_importing_stepfork_inspect_costs_nothing_until_a_name_is_used() -> None:
    code = (
        "import sys, stepfork.inspect\n"
        "before = 'stepfork.analysis' in sys.modules\n"
        "stepfork.inspect.inspect_bundle\n"
        "print(before, 'stepfork.analysis.inspection' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
