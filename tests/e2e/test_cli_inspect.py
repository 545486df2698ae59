"""``stepfork inspect``: summary, timeline, --events/--errors-only/--step/--json, sanitized output, errors.

Spec: cli-reference.txt "inspect"; exit codes: REFERENCE-NOTES.md section 4 table (0 ok, 1 --step matches
nothing, 2 unreadable).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import REFERENCE, run_cli
from .test_cli_validate import VERDICTS


@pytest.mark.parametrize("bundle", sorted(VERDICTS))
def test_every_reference_bundle_inspects_with_its_manifest_facts(bundle: str) -> None:
    path = REFERENCE / bundle
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    lines = (path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    result = run_cli("inspect", path, "--json")
    assert result.code == 0, result.text
    data = json.loads(result.out)
    assert data["agent_name"] == manifest["agent_name"]
    assert data["run_id"] == manifest["run_id"]
    assert data["status"] == manifest["status"]
    assert data["events"] == len(lines) == len(data["timeline"])
    types = [json.loads(line)["type"] for line in lines]
    assert data["tool_calls"] == types.count("tool_call")
    assert data["llm_calls"] == types.count("llm_request")
    legacy = not (path / "integrity.json").exists()
    assert data["integrity"] == ("UNVERIFIED (legacy bundle)" if legacy else "VERIFIED")
    human = run_cli("inspect", path)
    assert human.code == 0
    assert "Stepfork Trace Inspector" in human.out
    assert "Event Timeline" in human.out


def test_the_summary_and_timeline_show_the_spec_fields(golden_copy) -> None:
    result = run_cli("inspect", golden_copy("successful_run"))
    assert result.code == 0
    out = result.out
    for label in (
        "Agent:",
        "Run:",
        "Status:",
        "Events:",
        "Schema:",
        "Tool calls:",
        "LLM calls:",
        "Integrity:",
    ):
        assert label in out
    assert "run_success_001" in out
    assert "COMPLETED" in out
    assert "VERIFIED" in out
    timeline = out.split("Event Timeline", 1)[1]
    for cell in ("Step", "Type", "Name/Model", "Status", "weather_lookup", "gpt-test", "llm_response"):
        assert cell in timeline
    assert "Details" not in timeline


def test_events_adds_a_details_column_with_payloads(golden_copy) -> None:
    result = run_cli("inspect", golden_copy("successful_run"), "--events")
    assert result.code == 0
    assert "Details" in result.out
    assert "Kathmandu" in result.out


def test_errors_only_keeps_only_error_events(golden_copy) -> None:
    data = json.loads(run_cli("inspect", golden_copy("failed_tool_run"), "--errors-only", "--json").out)
    assert data["timeline"]
    assert {row["status"] for row in data["timeline"]} == {"error"}
    assert {row["type"] for row in data["timeline"]} == {"tool_result", "error"}


def test_step_limits_the_timeline_to_one_logical_step(golden_copy) -> None:
    data = json.loads(run_cli("inspect", golden_copy("successful_run"), "--step", "3", "--json").out)
    assert [(row["step"], row["type"], row["label"]) for row in data["timeline"]] == [
        (3, "tool_call", "weather_lookup")
    ]


def test_a_step_with_no_events_exits_1_with_the_spec_message(golden_copy) -> None:
    bundle = golden_copy("successful_run")
    human = run_cli("inspect", bundle, "--step", "42")
    assert human.code == 1
    assert human.out.strip().endswith("No events found at step 42.")  # the result: stdout (issue 32)
    machine = run_cli("inspect", bundle, "--step", "42", "--json")
    assert machine.code == 1
    assert json.loads(machine.out) == {
        "error": "missing_step",
        "message": "No events found at step 42.",
        "exit_code": 1,
    }


def test_an_unreadable_bundle_exits_2_and_json_mode_reports_unreadable_trace(tmp_path: Path) -> None:
    missing = tmp_path / "gone.sftrace"
    human = run_cli("inspect", missing)
    assert human.code == 2
    assert len(human.err.strip().splitlines()) == 1
    assert "Traceback" not in human.text
    machine = run_cli("inspect", missing, "--json")
    assert machine.code == 2
    payload = json.loads(machine.out)
    assert payload["error"] == "unreadable_trace"
    assert payload["message"]


def test_secrets_in_a_bundle_are_redacted_in_every_output(golden_copy) -> None:
    bundle = golden_copy("successful_run")
    secret = "sk-abcdefghijklmnop1234"
    events = bundle / "events.jsonl"
    events.write_text(events.read_text(encoding="utf-8").replace("Find Kathmandu weather", secret), "utf-8")
    for args in ([], ["--events"], ["--json"]):
        result = run_cli("inspect", bundle, *args)
        assert result.code == 0, result.text
        assert secret not in result.text
    assert "[REDACTED]" in run_cli("inspect", bundle, "--json").out
