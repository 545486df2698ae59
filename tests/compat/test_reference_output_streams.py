"""A command's result goes to stdout, a failing one included; usage errors go to stderr (issue 32; spec
cli-reference.txt; docs/cli.md "Output streams"). The real ``stepfork`` executable, as
``stepfork validate x | tee log`` and scripts run it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import GOLDEN
from ..e2e.conftest import run_cli


def test_validate_of_a_missing_bundle_prints_its_verdict_on_stdout(tmp_path: Path) -> None:
    result = run_cli("validate", "missing.sftrace", cwd=tmp_path)
    assert result.code == 2
    assert "Validation failed: 1 issues." in result.out
    assert "missing_file" in result.out
    assert result.err == ""


def test_validate_of_an_invalid_bundle_prints_the_checks_and_issues_on_stdout(golden_copy) -> None:
    bundle = golden_copy("successful_run")
    lines = (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()
    second = json.loads(lines[2])
    second["id"] = json.loads(lines[1])["id"]
    lines[2] = json.dumps(second)
    (bundle / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("validate", bundle)
    assert result.code == 1
    out = result.out.splitlines()
    assert out.index("Validation failed: 2 issues.") > out.index("✗ Run IDs consistent")
    assert any(line.startswith("  duplicate_event_id: ") for line in out)


def test_validate_verify_integrity_of_a_legacy_bundle_is_exit_3_on_stdout() -> None:
    result = run_cli("validate", GOLDEN / "legacy_v01.sftrace", "--verify-integrity")
    assert result.code == 3
    assert result.out.strip() == "Bundle has no integrity.json metadata. (UNVERIFIED (legacy bundle))"


def test_inspect_of_a_step_with_no_event_is_the_result_on_stdout() -> None:
    result = run_cli("inspect", GOLDEN / "successful_run.sftrace", "--step", "99")
    assert result.code == 1
    assert result.out.splitlines()[-1] == "No events found at step 99."
    assert result.err == ""


@pytest.mark.parametrize(
    "args",
    [
        ("replay", "successful_run.sftrace", "--entrypoint", "agent:run", "--mode", "derivd"),
        ("export", "successful_run.sftrace", "--pytest"),
        ("inspect", "missing.sftrace"),
        ("diff", "missing.sftrace", "other.sftrace"),
    ],
    ids=["invalid-mode", "missing-entrypoint", "unreadable-inspect", "unreadable-diff"],
)
def test_usage_errors_go_to_stderr_and_leave_stdout_empty(args: tuple[str, ...], golden_copy) -> None:
    bundle = golden_copy("successful_run")
    result = run_cli(*args, cwd=bundle.parent)
    assert result.code == 2, result.text
    assert result.out == ""
    assert result.err.strip()
    assert "Traceback" not in result.err


def test_json_errors_keep_their_shape_on_stdout() -> None:
    result = run_cli("inspect", GOLDEN / "successful_run.sftrace", "--step", "99", "--json")
    assert result.code == 1
    assert json.loads(result.out) == {
        "error": "missing_step",
        "message": "No events found at step 99.",
        "exit_code": 1,
    }
    assert result.err == "No events found at step 99.\n"


def test_no_command_is_a_usage_error() -> None:
    # click's rule for a group called without its command (docs/decisions.md; the earlier CLI exited 0)
    result = run_cli()
    assert result.code == 2
    assert result.out == ""
    assert "Usage: stepfork" in result.err
