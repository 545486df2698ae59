"""``stepfork run``: verdicts, reasons, receipts, on tests ``stepfork export`` wrote (spec "run")."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from .conftest import QuickstartExport, run_cli

RECEIPT_FIELDS = [
    "receipt_version",
    "verdict",
    "reason",
    "exit_status",
    "bundle",
    "bundle_digest",
    "test",
    "test_sha256",
    "counts",
    "command",
    "duration_ms",
    "stepfork_version",
    "created_at",
]


def test_the_fixed_entrypoint_passes_and_the_receipt_has_every_spec_field(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    test = quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    result = run_cli("run", "test_fixed.py", "--receipt", "receipts/fixed.json", cwd=quickstart)
    assert result.code == 0, result.text
    assert "Verdict: PASSED" in result.out
    assert "Receipt: receipts/fixed.json" in result.out
    receipt = json.loads((quickstart / "receipts" / "fixed.json").read_text(encoding="utf-8"))
    assert list(receipt)[: len(RECEIPT_FIELDS)] == RECEIPT_FIELDS
    assert receipt["receipt_version"] == 1
    assert receipt["verdict"] == "passed"
    assert receipt["reason"] is None
    assert receipt["exit_status"] == 0
    assert receipt["bundle"] == "notify.sftrace"
    assert receipt["test_sha256"] == hashlib.sha256(test.read_bytes()).hexdigest()
    assert receipt["counts"] == {"tests": 1, "failures": 0, "errors": 0, "skipped": 0}
    assert "pytest" in receipt["command"]
    assert receipt["created_at"].endswith("Z")
    assert receipt["stepfork_version"] == run_cli("--version").out.split()[-1]


def test_the_buggy_entrypoint_fails_as_a_caught_regression(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent", "test_buggy.py")
    result = run_cli("run", "test_buggy.py", "--json", cwd=quickstart)
    assert result.code == 1, result.text
    receipt = json.loads(result.out)
    assert receipt["verdict"] == "failed"
    assert receipt["exit_status"] == 1
    assert receipt["counts"]["failures"] == 1
    assert "behavior mismatch at 'carrier'" in receipt["detail"]


def test_a_missing_bundle_is_could_not_execute_not_a_regression(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    shutil.rmtree(quickstart / "notify.sftrace")
    result = run_cli("run", "test_fixed.py", "--receipt", "r.json", cwd=quickstart)
    assert result.code == 2, result.text
    assert "Verdict: COULD NOT EXECUTE" in result.out
    assert "Reason: bundle_missing" in result.out
    assert "the bundle this test names is not there: notify.sftrace" in result.out
    assert "The check did not execute, so this run says nothing about the agent's behaviour." in result.out
    receipt = json.loads((quickstart / "r.json").read_text(encoding="utf-8"))
    assert receipt["verdict"] == "could_not_execute"
    assert receipt["reason"] == "bundle_missing"
    assert receipt["exit_status"] is None
    assert receipt["bundle_digest"] is None
    assert receipt["command"] == []


def test_an_unreadable_bundle_is_could_not_execute(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    (quickstart / "notify.sftrace" / "events.jsonl").write_text("{broken\n", encoding="utf-8")
    result = run_cli("run", "test_fixed.py", "--json", cwd=quickstart)
    assert result.code == 2
    assert json.loads(result.out)["reason"] == "bundle_unreadable"


def test_an_entrypoint_the_tree_cannot_import_is_could_not_execute(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    (quickstart / "quickstart.py").rename(quickstart / "renamed_agent.py")
    result = run_cli("run", "test_fixed.py", "--json", cwd=quickstart)
    assert result.code == 2, result.text
    receipt = json.loads(result.out)
    assert receipt["reason"] == "entrypoint_unresolvable"
    assert receipt["exit_status"] is None


def test_a_removed_entrypoint_function_is_could_not_execute(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    source = (quickstart / "quickstart.py").read_text(encoding="utf-8")
    (quickstart / "quickstart.py").write_text(
        source.replace("def run_agent_fixed(", "def run_agent_v2("), "utf-8"
    )
    result = run_cli("run", "test_fixed.py", "--json", cwd=quickstart)
    assert result.code == 2
    assert json.loads(result.out)["reason"] == "entrypoint_unresolvable"


def test_bundle_option_overrides_the_trace_path_of_the_test(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    result = run_cli("run", "test_fixed.py", "--bundle", "elsewhere.sftrace", "--json", cwd=quickstart)
    assert result.code == 2
    receipt = json.loads(result.out)
    assert (receipt["reason"], receipt["bundle"]) == ("bundle_missing", "elsewhere.sftrace")


def test_a_missing_test_file_is_one_line_exit_2(tmp_path: Path) -> None:
    result = run_cli("run", "test_nothing.py", cwd=tmp_path)
    assert result.code == 2
    assert result.err.strip() == "test file not found: test_nothing.py"


def test_pytest_args_reach_the_child(quickstart: Path, quickstart_export: QuickstartExport) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    result = run_cli(
        "run", "test_fixed.py", "--pytest-arg", "-k", "--pytest-arg", "no_such_test", "--json", cwd=quickstart
    )
    assert result.code == 2, result.text
    receipt = json.loads(result.out)
    assert receipt["reason"] == "no_tests_collected"
    assert receipt["command"][-2:] == ["-k", "no_such_test"]


def test_a_timeout_that_is_not_positive_is_bad_input_exit_2(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    for value in ("0", "-1"):
        result = run_cli("run", "test_fixed.py", "--timeout-seconds", value, cwd=quickstart)
        assert result.code == 2, result.text
        assert "--timeout-seconds must be a positive number of seconds" in result.err
        assert "Traceback" not in result.text
