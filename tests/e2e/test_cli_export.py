"""``stepfork export``: the written test, its warning, and each spec error with its exit code.

Spec: cli-reference.txt "export"; exit codes: REFERENCE-NOTES.md section 4 table (0 written; 1 destination
exists / export error; 2 bad input, non-pytest, missing entrypoint, strict validation failed, bad JSON).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path

import pytest

from ..conftest import as_legacy_bundle
from .conftest import GOLDEN, run_cli


def export(cwd: Path, *args: str):
    return run_cli("export", "notify.sftrace", *args, cwd=cwd)


def test_export_writes_a_test_with_the_corrected_expectation(quickstart: Path) -> None:
    result = export(
        quickstart,
        "--pytest",
        "--entrypoint",
        "quickstart:run_agent_fixed",
        "--expect-output",
        "expected.json",
        "--output",
        "test_notify_fixed.py",
    )
    assert result.code == 0, result.text
    assert result.out.splitlines() == [
        "Wrote test_notify_fixed.py",
        "Entrypoint: quickstart:run_agent_fixed",
        "Mode:       frozen",
        'Expectation: {"order_id": "ORD-1001", "should_notify": true, "carrier": "FedEx"}',
    ]
    source = (quickstart / "test_notify_fixed.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert any(isinstance(n, ast.FunctionDef) and n.name.startswith("test_") for n in tree.body)
    assert "run_regression_case" in source


def test_without_expect_output_the_recorded_output_is_asserted_with_a_warning(quickstart: Path) -> None:
    result = export(quickstart, "--pytest", "--entrypoint", "quickstart:run_agent")
    assert result.code == 0, result.text
    assert "Wrote test_notify_regression.py" in result.out
    assert 'Expectation: {"order_id": "ORD-1001", "should_notify": false}' in result.out
    assert "asserts the recorded run output" in result.err
    source = (quickstart / "test_notify_regression.py").read_text(encoding="utf-8")
    assert "EXPECTATION_SOURCE = 'recorded'" in source


def test_pytest_is_the_default_format_and_the_flag_is_still_accepted(quickstart: Path) -> None:
    # issue 13: --pytest is no longer required for the only format; --no-pytest is still refused
    result = export(quickstart, "--entrypoint", "quickstart:run_agent")
    assert result.code == 0, result.text
    assert (quickstart / "test_notify_regression.py").is_file()
    result = export(quickstart, "--pytest", "-e", "quickstart:run_agent", "-o", "t2.py")
    assert result.code == 0, result.text
    result = export(quickstart, "--no-pytest", "--entrypoint", "quickstart:run_agent")
    assert result.code == 2
    assert result.err.strip() == "v0.1 supports pytest export only (--pytest)."


def test_an_entrypoint_is_required(quickstart: Path) -> None:
    result = export(quickstart, "--pytest")
    assert result.code == 2
    assert result.err.strip() == "An executable regression test needs --entrypoint MODULE:FUNCTION."


def test_an_existing_destination_is_never_overwritten_without_overwrite(quickstart: Path) -> None:
    target = quickstart / "test_x.py"
    target.write_text("# mine\n", encoding="utf-8")
    result = export(quickstart, "--pytest", "--entrypoint", "quickstart:run_agent", "--output", "test_x.py")
    assert result.code == 1
    assert result.err.strip() == "test_x.py already exists; pass --overwrite to replace it."
    assert target.read_text(encoding="utf-8") == "# mine\n"
    again = export(
        quickstart, "--pytest", "--entrypoint", "quickstart:run_agent", "--output", "test_x.py", "--overwrite"
    )
    assert again.code == 0, again.text
    assert "run_regression_case" in target.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "command",
    [
        ["export", "notify.sftrace", "--pytest", "--entrypoint", "quickstart:run_agent"],
        ["minimize", "notify.sftrace", "--entrypoint", "quickstart:run_agent"],
    ],
)
@pytest.mark.parametrize("where", ["missing.json", "."])
def test_an_expect_output_file_that_cannot_be_read_is_named_as_such_not_as_bad_json(
    quickstart: Path, command: list[str], where: str
) -> None:
    result = run_cli(*command, "--expect-output", where, cwd=quickstart)
    assert result.code == 2, result.text
    assert result.err.strip().splitlines()[-1].startswith("--expect-output cannot be read: "), result.err
    assert "not valid JSON" not in result.err
    assert not list(quickstart.glob("test_*.py"))
    assert not list(quickstart.glob("*-minimized.sftrace"))


def test_invalid_expectation_json_is_exit_2(quickstart: Path) -> None:
    (quickstart / "bad.json").write_text("{not json", encoding="utf-8")
    result = export(
        quickstart, "--pytest", "--entrypoint", "quickstart:run_agent", "--expect-output", "bad.json"
    )
    assert result.code == 2
    assert result.err.startswith("--expect-output is not valid JSON: ")
    assert not list(quickstart.glob("test_*.py"))


def test_an_unsupported_trajectory_shape_is_exit_2(quickstart: Path) -> None:
    (quickstart / "traj.json").write_text(json.dumps({"teleport": ["x"]}), encoding="utf-8")
    result = export(
        quickstart, "--pytest", "--entrypoint", "quickstart:run_agent", "--expect-trajectory", "traj.json"
    )
    assert result.code == 2
    assert result.err.startswith("Invalid --expect-trajectory: ")


def test_a_bundle_failing_strict_validation_is_exit_2(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "partial_run.sftrace", tmp_path / "notify.sftrace")
    result = export(tmp_path, "--pytest", "--entrypoint", "agent:run")
    assert result.code == 2
    assert "strict validation" in result.err
    assert "run_start_count" in result.err


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_legacy_bundle_whose_events_file_is_not_a_regular_file_gets_validates_reason(
    quickstart: Path, kind: str
) -> None:
    # a bundle without integrity.json: before, only the code ("strict validation (invalid_event).")
    bundle = as_legacy_bundle(quickstart / "notify.sftrace")
    events = bundle / "events.jsonl"
    if kind == "symlink":
        events.rename(quickstart / "elsewhere.jsonl")
        events.symlink_to(quickstart / "elsewhere.jsonl")
    else:
        events.unlink()
        os.mkfifo(events)
    result = export(quickstart, "--entrypoint", "quickstart:run_agent")
    assert result.code == 2, result.text
    reason = "a symbolic link (refused)" if kind == "symlink" else "not a regular file (refused)"
    assert f"strict validation ({'invalid_event' if kind == 'symlink' else 'missing_file'}): " in result.err
    assert f"events.jsonl: {reason}" in result.err
    assert "Traceback" not in result.text


def test_an_invalid_mode_is_exit_2(quickstart: Path) -> None:
    result = export(quickstart, "--pytest", "--entrypoint", "quickstart:run_agent", "--mode", "turbo")
    assert result.code == 2
    assert result.err.splitlines()[0] == "Invalid replay mode turbo."


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--allow-live-tool", "order_status"], "only valid with --mode live"),
        (["--mode", "live", "--allow-live-tool", "not_a_tool"], "not_a_tool"),
    ],
)
def test_live_tool_authorization_is_checked(quickstart: Path, args: list[str], fragment: str) -> None:
    result = export(quickstart, "--pytest", "--entrypoint", "quickstart:run_agent", *args)
    assert result.code == 2
    assert fragment in result.err


def test_a_live_export_embeds_the_allowlist_as_a_literal(quickstart: Path) -> None:
    result = export(
        quickstart,
        "--pytest",
        "--entrypoint",
        "quickstart:run_agent",
        "--mode",
        "live",
        "--allow-live-tool",
        "order_status",
        "--output",
        "test_live.py",
    )
    assert result.code == 0, result.text
    source = (quickstart / "test_live.py").read_text(encoding="utf-8")
    assert "ALLOW_LIVE_TOOLS = ['order_status']" in source
    assert "MODE = 'live'" in source


def test_a_failed_recording_without_expect_output_exports_without_an_expectation(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "failed_tool_run.sftrace", tmp_path / "notify.sftrace")
    result = export(tmp_path, "--pytest", "--entrypoint", "agent:run", "--output", "test_failed.py")
    assert result.code == 0, result.text
    assert "no completed output" in result.err
    source = (tmp_path / "test_failed.py").read_text(encoding="utf-8")
    assert "HAS_EXPECTATION = False" in source
    assert "EXPECTATION = None" in source
    assert "EXPECTATION_SOURCE = 'none'" in source


def test_secrets_never_reach_the_exported_test(quickstart: Path) -> None:
    secret = "sk-abcdefghijklmnopqrstu"
    (quickstart / "leaky.json").write_text(json.dumps({"note": secret, "token_ok": 1}), encoding="utf-8")
    result = export(
        quickstart,
        "--pytest",
        "--entrypoint",
        "quickstart:run_agent",
        "--expect-output",
        "leaky.json",
        "--output",
        "test_leaky.py",
    )
    assert result.code == 0, result.text
    assert secret not in result.text
    assert secret not in (quickstart / "test_leaky.py").read_text(encoding="utf-8")


def test_a_run_without_a_final_output_exports_a_test_of_the_calls_that_passes(quickstart: Path) -> None:
    # as `stepfork record -- python SCRIPT` records (no set_output): the test must not assert None
    record = (
        "import sys; sys.path.insert(0, '.'); import quickstart; from stepfork import record\n"
        "with record('notify-agent', output='no-output.sftrace'):\n"
        "    quickstart.run_agent()\n"
    )
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", record], cwd=quickstart, check=True)
    result = run_cli(
        "export", "no-output.sftrace", "-e", "quickstart:run_agent", "-o", "test_calls.py", cwd=quickstart
    )
    assert result.code == 0, result.text
    source = (quickstart / "test_calls.py").read_text(encoding="utf-8")
    assert "EXPECTATION_SOURCE = 'none'" in source
    done = run_cli("run", "test_calls.py", cwd=quickstart)
    assert done.code == 0, done.text
    assert "Verdict: PASSED" in done.out
