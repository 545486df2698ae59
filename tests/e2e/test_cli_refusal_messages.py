"""Refusals name what the command line can do about them: an existing
output names ``--overwrite`` (never the library's ``overwrite=True``), ``export`` to a directory is one
message and one exit code with or without ``--overwrite``, ``fork --live-llm`` with a label the recording
does not have is refused before anything runs, and ``replay --json`` names an unreadable bundle
``unreadable_trace`` as ``inspect``, ``diff`` and ``fork`` do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import run_cli


def test_redact_over_an_existing_bundle_names_the_overwrite_option(quickstart: Path) -> None:
    shutil.copytree(quickstart / "notify.sftrace", quickstart / "copy.sftrace")
    result = run_cli("redact", "notify.sftrace", "-o", "copy.sftrace", cwd=quickstart)
    assert result.code == 2
    assert result.err == "copy.sftrace already exists; pass --overwrite to replace it.\n"
    as_json = run_cli("redact", "notify.sftrace", "-o", "copy.sftrace", "--json", cwd=quickstart)
    assert json.loads(as_json.out)["error"] == "already_exists"
    assert run_cli("redact", "notify.sftrace", "-o", "copy.sftrace", "--overwrite", cwd=quickstart).code == 0


def test_export_to_a_directory_is_one_refusal_with_or_without_overwrite(quickstart: Path) -> None:
    (quickstart / "tests").mkdir()
    args = ("export", "notify.sftrace", "-e", "quickstart:run_agent_fixed", "-o", "tests")
    plain = run_cli(*args, cwd=quickstart)
    forced = run_cli(*args, "--overwrite", cwd=quickstart)
    expected = "cannot write tests: tests exists and is not a regular file; it is not replaced\n"
    assert (plain.code, plain.err) == (1, expected)
    assert (forced.code, forced.err) == (1, expected)
    assert "--overwrite to replace" not in plain.err
    assert (quickstart / "tests").is_dir()


def test_fork_refuses_a_live_llm_label_the_recording_does_not_have(quickstart: Path) -> None:
    args = ("fork", "notify.sftrace", "--step", "3", "-e", "quickstart:run_agent", "-o", "f.sftrace")
    result = run_cli(*args, "--live-llm", "nope/x", cwd=quickstart)
    assert result.code == 2, result.text
    assert result.err == (
        "--live-llm names an LLM the recording never calls: nope/x (its LLM labels: local/local-notify-1)\n"
    )
    assert not (quickstart / "f.sftrace").exists()
    as_json = run_cli(*args, "--live-llm", "nope/x", "--json", cwd=quickstart)
    assert json.loads(as_json.out)["error"] == "invalid_option"


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_replay_json_names_an_unreadable_bundle_as_the_other_commands_do(quickstart: Path) -> None:
    codes = {}
    for command in (
        ("replay", "nope.sftrace", "-e", "quickstart:run_agent", "--json"),
        ("inspect", "nope.sftrace", "--json"),
        ("diff", "nope.sftrace", "notify.sftrace", "--json"),
        ("fork", "nope.sftrace", "--step", "1", "-e", "quickstart:run_agent", "-o", "f.sftrace", "--json"),
    ):
        result = run_cli(*command, cwd=quickstart)
        assert result.code == 2, result.text
        codes[command[0]] = json.loads(result.out)["error"]
    assert set(codes.values()) == {"unreadable_trace"}, codes
