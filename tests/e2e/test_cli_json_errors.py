"""``--json`` errors have one shape for every command (s9-cli 1): an error that stops a command before its
result is one JSON object on stdout, ``{"error": <code>, "message": <the line>, "exit_code": <n>}``, the same
line(s) on stderr, and the command's documented exit code, as ``check --json`` gives them
(``stepfork.cli.output.fail`` + ``with_json_errors``; docs/cli.md "Errors under --json").

``inspect``, ``minimize``, ``redact`` and ``score`` printed their own ``{"error", "message"}`` objects before
(no ``exit_code``; ``redact`` and ``score`` put the message unsanitized on stdout). One real ``stepfork``
for the streams and the exit code; the other cells through the console script's ``main`` in-process. No
agent is replayed: every error stops its command before that."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import InProcess, Result, run_cli


def json_error(done: Result, code: int) -> dict[str, object]:
    """The JSON error of ``done``: stdout is that one object, stderr the line(s) it carries, exit ``code``."""
    assert done.code == code, done.text
    error = json.loads(done.out)
    assert set(error) - {"path"} == {"error", "message", "exit_code"}, error
    assert error["exit_code"] == code
    assert done.err.rstrip("\n") == error["message"]
    assert "Traceback" not in done.err
    return error


def test_inspect_of_a_missing_bundle_is_a_json_error_from_the_real_cli(tmp_path: Path) -> None:
    done = run_cli("inspect", "gone.sftrace", "--json", cwd=tmp_path)
    error = json_error(done, 2)
    assert error["error"] == "unreadable_trace"
    assert str(error["message"]).startswith("Unreadable bundle gone.sftrace: ")
    human = run_cli("inspect", "gone.sftrace", cwd=tmp_path)  # without --json: stdout empty, same line
    assert (human.code, human.out, human.err) == (2, "", done.err)


def test_inspect_of_a_step_without_events_is_exit_1_with_exit_code_1(
    golden_copy: Callable[..., Path], in_process: InProcess
) -> None:
    done = in_process("inspect", golden_copy("successful_run"), "--step", "42", "--json")
    assert json_error(done, 1) == {
        "error": "missing_step",
        "message": "No events found at step 42.",
        "exit_code": 1,
    }


@pytest.fixture
def minimize_work(tmp_path: Path, golden_copy: Callable[..., Path]) -> Path:
    golden_copy("successful_run", "ok.sftrace")
    (tmp_path / "agent_mod.py").write_text("def run(prompt=None):\n    return prompt\n")
    return tmp_path


def test_minimize_of_an_unreadable_trace_is_a_json_error(minimize_work: Path, in_process: InProcess) -> None:
    done = in_process("minimize", "gone.sftrace", "-e", "agent_mod:run", "--json", cwd=minimize_work)
    error = json_error(done, 2)
    assert error["error"] == "unreadable_trace"
    assert str(error["message"]).startswith("Unreadable trace: ")


def test_minimize_of_a_changed_bundle_is_the_integrity_json_error(
    minimize_work: Path, in_process: InProcess
) -> None:
    events = minimize_work / "ok.sftrace" / "events.jsonl"
    events.write_bytes(b"".join(events.read_bytes().splitlines(keepends=True)[:-1]))
    done = in_process("minimize", "ok.sftrace", "-e", "agent_mod:run", "--json", cwd=minimize_work)
    error = json_error(done, 2)
    assert error["error"] == "integrity_mismatch"
    assert "does not match its digest in integrity.json" in str(error["message"])


def test_minimize_of_an_unknown_mode_is_a_json_error_too(minimize_work: Path, in_process: InProcess) -> None:
    # refused by the shared option parser (stepfork.cli.guide.parse_mode), which printed no JSON before
    args = ("minimize", "ok.sftrace", "-e", "agent_mod:run", "--mode", "turbo", "--json")
    error = json_error(in_process(*args, cwd=minimize_work), 2)
    assert error["error"] == "invalid_option"
    assert str(error["message"]).startswith("Invalid replay mode turbo.")


def test_minimize_of_a_refused_mode_keeps_its_exit_code_and_code(
    minimize_work: Path, in_process: InProcess
) -> None:
    args = ("minimize", "ok.sftrace", "-e", "agent_mod:run", "--mode", "forbidden", "--json")
    error = json_error(in_process(*args, cwd=minimize_work), 2)
    assert error["error"] == "invalid_option"


def test_redact_into_an_existing_bundle_is_a_json_error(
    golden_copy: Callable[..., Path], in_process: InProcess
) -> None:
    source = golden_copy("successful_run", "a.sftrace")
    target = golden_copy("failed_tool_run", "b.sftrace")
    error = json_error(in_process("redact", source, "-o", target, "--json"), 2)
    assert error["error"] == "already_exists"


def test_redact_of_a_missing_bundle_is_a_json_error(tmp_path: Path, in_process: InProcess) -> None:
    done = in_process("redact", tmp_path / "gone.sftrace", "-o", tmp_path / "out.sftrace", "--json")
    error = json_error(done, 2)
    assert error["error"] == "missing_file"
    assert not (tmp_path / "out.sftrace").exists()


def test_score_of_a_bundle_is_a_json_error_naming_the_path(
    golden_copy: Callable[..., Path], in_process: InProcess
) -> None:
    bundle = golden_copy("successful_run")
    error = json_error(in_process("score", bundle, "--json"), 2)
    assert error["error"] == "not_a_test"
    assert error["path"] == str(bundle)
    assert str(error["message"]).startswith(f"{bundle} is a bundle, not a test")


def test_score_of_a_test_it_cannot_parse_is_a_json_error(tmp_path: Path, in_process: InProcess) -> None:
    test = tmp_path / "test_x.py"
    test.write_text("from stepfork.replay import run_regression_case\n\nTRACE_PATH = (\n")
    error = json_error(in_process("score", test, "--json"), 2)
    assert error["error"] == "unreadable_test"
    assert error["path"] == str(test)
    assert str(error["message"]).startswith(f"cannot read test {test}: ")


def test_diff_of_an_unreadable_bundle_is_a_json_error(
    golden_copy: Callable[..., Path], in_process: InProcess, tmp_path: Path
) -> None:
    done = in_process("diff", golden_copy("successful_run"), tmp_path / "gone.sftrace", "--json")
    error = json_error(done, 2)
    assert error["error"] == "unreadable_trace"
    assert str(error["message"]).startswith(f"Unreadable candidate bundle {tmp_path / 'gone.sftrace'}: ")


def test_fork_with_a_bad_override_is_a_json_error(
    golden_copy: Callable[..., Path], in_process: InProcess, tmp_path: Path
) -> None:
    args = ("fork", golden_copy("successful_run"), "--step", "1", "-e", "agent_mod:run")
    done = in_process(*args, "-o", tmp_path / "out.sftrace", "--override", "nonsense", "--json")
    error = json_error(done, 2)
    assert error["error"] == "invalid_override"
    assert str(error["message"]).startswith("Invalid --override nonsense: ")
    assert not (tmp_path / "out.sftrace").exists()


def test_run_of_a_bundle_is_a_json_error(golden_copy: Callable[..., Path], in_process: InProcess) -> None:
    bundle = golden_copy("successful_run")
    error = json_error(in_process("run", bundle, "--json"), 2)
    assert error["error"] == "not_a_test"
    assert str(error["message"]).startswith(f"{bundle} is a bundle, not a test")
