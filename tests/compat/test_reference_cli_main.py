"""``from stepfork.cli.main import app`` (issue 32): the earlier implementation's module of the CLI, as its
users' scripts and tests drive it with typer's ``CliRunner``. Written from interop/REFERENCE-API.md
(``stepfork.cli.main:app`` is its console script) against the public API only."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import stepfork
from stepfork import FailureInfo, ToolCall, Trace
from stepfork.trace import EventStatus, RunEnd, RunStart, RunStatus, ToolResult

runner = CliRunner()


def _bundle(directory: Path) -> Path:
    trace = Trace(agent_name="notify-agent")
    start = trace.add(RunStart(input={"order_id": "ORD-1"}))
    call = trace.add(ToolCall(name="order_status", input={"order_id": "ORD-1"}, parent_id=start.id))
    result = trace.add(ToolResult(name="order_status", output={"status": "shipped"}, parent_id=call.id))
    trace.add(RunEnd(run_status=RunStatus.COMPLETED, output={"notify": True}, parent_id=result.id))
    return trace.save(directory / "notify.sftrace", status=RunStatus.COMPLETED)


def test_main_app_is_the_typer_app_of_stepfork_cli_app() -> None:
    import typer

    from stepfork.cli import app as app_module
    from stepfork.cli.main import app, main

    assert isinstance(app, typer.Typer)
    assert app is app_module.app
    assert main is app_module.main


def test_version_through_the_app() -> None:
    from stepfork.cli.main import app

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"stepfork {stepfork.__version__}\n"


def test_help_through_the_app_lists_the_commands() -> None:
    from stepfork.cli.main import app

    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("validate", "inspect", "replay", "diff", "export"):
        assert command in result.stdout


def test_validate_and_inspect_through_the_app(tmp_path: Path) -> None:
    from stepfork.cli.main import app

    bundle = _bundle(tmp_path)
    checked = runner.invoke(app, ["validate", str(bundle), "--verify-integrity"])
    assert checked.exit_code == 0, checked.output
    assert "Validation passed." in checked.stdout
    shown = runner.invoke(app, ["inspect", str(bundle), "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert (data["agent_name"], data["events"], data["tool_calls"]) == ("notify-agent", 4, 1)
    assert [row["type"] for row in data["timeline"]] == ["run_start", "tool_call", "tool_result", "run_end"]


def test_a_failing_validation_is_the_result_on_stdout_through_the_app(tmp_path: Path) -> None:
    from stepfork.cli.main import app

    result = runner.invoke(app, ["validate", str(tmp_path / "missing.sftrace")])
    assert result.exit_code == 2
    assert "Validation failed" in result.stdout
    assert "missing_file" in result.stdout


def test_a_failed_run_inspects_with_its_failure(tmp_path: Path) -> None:
    from stepfork.cli.main import app

    trace = Trace(agent_name="booking-agent")
    start = trace.add(RunStart())
    call = trace.add(ToolCall(name="flight_search", input={"q": "KTM"}, parent_id=start.id))
    failed = {"output": {"ok": False}, "status": EventStatus.ERROR}
    trace.add(ToolResult(name="flight_search", parent_id=call.id, **failed))
    trace.add(RunEnd(run_status=RunStatus.FAILED))
    failure = FailureInfo(type="ToolError", message="timeout", step=2)
    bundle = trace.save(tmp_path / "failed.sftrace", status=RunStatus.FAILED, failure=failure)
    result = runner.invoke(app, ["inspect", str(bundle), "--errors-only", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["failure"] == {"type": "ToolError", "message": "timeout", "step": 2}
    assert [row["label"] for row in data["timeline"]] == ["flight_search"]
