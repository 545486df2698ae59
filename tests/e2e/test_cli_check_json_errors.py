"""``stepfork check --json``: an error that stops the check before its result is still one JSON object on
stdout (``{"error", "message", "exit_code"}``), exit 2, with the same one human line on stderr (s8-ux 1).

One real ``stepfork`` for the exit code and the streams; the other errors in-process (the same ``main``).
No agent is replayed: each error stops the check before the corpus is."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import InProcess, Result, run_cli

AGENT = "def run(prompt=None):\n    return prompt\n\n\nclass Refused(Exception):\n    pass\n"


@pytest.fixture
def work(tmp_path: Path, golden_copy: Callable[..., Path]) -> Path:
    """tmp_path holding a one-bundle corpus (corpus/ok.sftrace) and an importable agent module."""
    (tmp_path / "corpus").mkdir()
    golden_copy("successful_run", "corpus/ok.sftrace")
    (tmp_path / "agent_mod.py").write_text(AGENT)
    return tmp_path


def _error(done: Result) -> dict[str, object]:
    """The JSON error of ``done``: stdout is that one object, stderr the human line(s) it carries."""
    assert done.code == 2, done.text
    error = json.loads(done.out)
    assert set(error) == {"error", "message", "exit_code"}
    assert error["exit_code"] == 2
    assert done.err.rstrip("\n") == error["message"]
    assert "Traceback" not in done.err
    return error


def test_an_entrypoint_that_cannot_be_imported_is_a_json_error(work: Path) -> None:
    done = run_cli("check", "corpus", "--entrypoint", "bad.module:fn", "--json", cwd=work)
    error = _error(done)
    assert error["error"] == "entrypoint_unresolvable"
    assert str(error["message"]).startswith("Unable to resolve entrypoint bad.module:fn: cannot import")
    # without --json, stdout stays empty and stderr says the same line
    text = run_cli("check", "corpus", "--entrypoint", "bad.module:fn", cwd=work)
    assert (text.code, text.out, text.err) == (2, "", done.err)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["--entrypoint", "agent_mod:run", "--raise-as", "ValueError=agent_mod:Missing"],
            "raise_as_unresolvable",
            "Unable to resolve --raise-as class for ValueError (agent_mod:Missing): module 'agent_mod' has "
            "no attribute 'Missing'",
        ),
        (  # a function where --raise-as names a class (s9-cli 3): refused before the corpus is replayed
            ["--entrypoint", "agent_mod:run", "--raise-as", "ValueError=builtins:len"],
            "raise_as_unresolvable",
            "Unable to resolve --raise-as class for ValueError (builtins:len): 'builtins:len' is not a class "
            "but a builtin_function_or_method; expected an Exception subclass",
        ),
        (
            ["--entrypoint", "agent_mod:missing"],
            "entrypoint_unresolvable",
            "Unable to resolve entrypoint agent_mod:missing: module 'agent_mod' has no attribute 'missing'",
        ),
        (
            ["--entrypoint", "agent_mod"],
            "entrypoint_unresolvable",
            "Unable to resolve entrypoint.\ninvalid entrypoint 'agent_mod'; expected the form MODULE:",
        ),
        ([], "entrypoint_unresolvable", "Unable to resolve entrypoint.\nmissing --entrypoint MODULE:"),
        (["--entrypoint", "agent_mod:run", "--jobs", "0"], "invalid_option", "--jobs must be at least 1"),
        (
            ["--entrypoint", "agent_mod:run", "--raise-as", "nonsense"],
            "invalid_option",
            "Invalid --raise-as 'nonsense': ",
        ),
        (
            ["--entrypoint", "agent_mod:run", "--junit", "corpus/ok.sftrace/report.xml"],
            "output_refused",
            "refusing to write the JUnit report to corpus/ok.sftrace/report.xml: it is inside the bundle",
        ),
    ],
)
def test_each_early_error_is_one_json_object(
    work: Path, in_process: InProcess, args: list[str], code: str, message: str
) -> None:
    error = _error(in_process("check", "corpus", *args, "--json", cwd=work))
    assert error["error"] == code
    assert str(error["message"]).startswith(message)


def test_a_corpus_naming_no_bundle_is_a_json_error(work: Path, in_process: InProcess) -> None:
    error = _error(in_process("check", work / "nothing-here", "--entrypoint", "agent_mod:run", "--json"))
    assert error["error"] == "invalid_corpus"
    assert str(error["message"]).startswith("Invalid corpus: ")
