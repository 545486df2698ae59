"""The CLI guides (issue 13): help a newcomer can read, suggestions for typos, messages that fit the case,
colour only on a terminal, the replay header before the agent runs. Through the real ``stepfork``.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from stepfork.analysis.export import EXPORT_MODES
from stepfork.analysis.minimize import MODES as MINIMIZE_MODES
from stepfork.cli.app import COMMANDS
from stepfork.cli.guide import MODES

from .conftest import GOLDEN, cli_env, run_cli, stepfork_executable

WORKFLOW = [
    "record",
    "validate",
    "inspect",
    "view",
    "replay",
    "diff",
    "minimize",
    "fork",
    "export",
    "run",
    "score",
    "check",
    "import",
    "redact",
    "upload",
]


@cache
def help_text(command: str) -> str:
    """``stepfork COMMAND --help`` through the real executable, once per command per test process: the text
    is a function of the installed CLI alone, so the help tests below share it instead of asking again."""
    result = run_cli(command, "--help")
    assert result.code == 0, result.text
    return result.out


def test_commands_are_listed_in_workflow_order() -> None:
    assert list(COMMANDS) == WORKFLOW
    top = run_cli("--help").out
    listed = re.findall(r"^  (\w+)  ", top.split("Commands:", 1)[1], re.MULTILINE)
    assert listed == WORKFLOW


@pytest.mark.parametrize("command", WORKFLOW)
def test_help_uses_path_style_metavars(command: str) -> None:
    text = help_text(command)
    assert not re.search(r"\{\w+\}|<(str|int|float|path|list\[str\])>", text), text
    assert re.search(r"^Usage: stepfork \S+ \[OPTIONS\] [A-Z]+", text, re.MULTILINE), text


def test_every_mode_option_lists_its_choices_and_the_lists_are_what_the_commands_accept() -> None:
    assert MODES["export"] == EXPORT_MODES
    assert MODES["minimize"] == MINIMIZE_MODES
    for command, choices in MODES.items():
        assert f"-m, --mode [{'|'.join(choices)}]" in help_text(command)


@pytest.mark.parametrize(
    ("flag", "long", "commands"),
    [
        ("-e", "--entrypoint", ["replay", "minimize", "fork", "export", "check"]),
        ("-o", "--output", ["record", "view", "minimize", "fork", "export", "import", "redact"]),
        ("-m", "--mode", ["replay", "minimize", "export"]),
    ],
)
def test_the_same_short_flags_on_every_command_that_has_the_option(
    flag: str, long: str, commands: list[str]
) -> None:
    for command in WORKFLOW:
        text = help_text(command)
        if command in commands:
            assert f"{flag}, {long}" in text, command
        else:
            assert long not in text, command  # the list above is complete


def test_help_wording() -> None:
    assert "Replace the output bundle (--output)" in help_text("fork")
    assert "yourself" not in help_text("run")
    assert "the only format and the default" in " ".join(help_text("export").split())


def test_modes_are_case_insensitive_and_a_typo_gets_a_suggestion(quickstart: Path) -> None:
    ok = run_cli("replay", "notify.sftrace", "-e", "quickstart:run_agent", "-m", "FROZEN", cwd=quickstart)
    assert ok.code == 0, ok.text
    assert re.search(r"^Mode +frozen$", ok.out, re.MULTILINE)
    typo = run_cli("replay", "notify.sftrace", "-e", "quickstart:run_agent", "-m", "frozn", cwd=quickstart)
    assert typo.code == 2
    assert typo.err.splitlines() == [
        "Invalid replay mode frozn.",
        "Choose one of: frozen, live, forbidden, manual. Did you mean 'frozen'?",
    ]
    assert typo.out == ""


def test_an_entrypoint_attribute_typo_gets_a_suggestion(quickstart: Path) -> None:
    result = run_cli("replay", "notify.sftrace", "-e", "quickstart:run_agnt", cwd=quickstart)
    assert result.code == 2
    assert "has no attribute 'run_agnt'; did you mean 'run_agent'" in result.err


def test_an_option_name_typo_gets_a_suggestion(quickstart: Path) -> None:
    result = run_cli("replay", "notify.sftrace", "--entrypiont", "quickstart:run_agent", cwd=quickstart)
    assert result.code == 2
    assert "--entrypoint" in result.err.split("No such option: --entrypiont", 1)[1]


@pytest.mark.parametrize("command", ["run", "score"])
def test_run_and_score_say_when_given_a_bundle_or_a_file_that_is_no_exported_test(
    quickstart: Path, command: str
) -> None:
    bundle = run_cli(command, "notify.sftrace", cwd=quickstart)
    assert bundle.code == 2
    assert bundle.err.startswith(f"notify.sftrace is a bundle, not a test: `stepfork {command}` takes")
    assert "stepfork export notify.sftrace -e MODULE:FUNCTION" in bundle.err
    other = run_cli(command, "quickstart.py", cwd=quickstart)
    assert other.code == 2
    assert other.err.startswith("quickstart.py is not a test `stepfork export` wrote")
    assert len(other.err.strip().splitlines()) == 1


def test_diff_names_the_unreadable_bundle_and_warns_about_different_agents(tmp_path: Path) -> None:
    missing = run_cli("diff", GOLDEN / "diff_baseline.sftrace", tmp_path / "nope.sftrace")
    assert missing.code == 2
    assert missing.err.startswith(f"Unreadable candidate bundle {tmp_path / 'nope.sftrace'}: ")
    other = run_cli("diff", GOLDEN / "diff_baseline.sftrace", GOLDEN / "successful_run.sftrace")
    assert other.code == 1
    assert other.err.startswith("Warning: the two runs are of different agents (baseline ")


def _colour_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in cli_env().items() if key not in ("NO_COLOR", "FORCE_COLOR")}
    return {**env, **extra}


def test_verdicts_are_coloured_on_a_terminal_only(quickstart: Path) -> None:
    command = [stepfork_executable(), "replay", "notify.sftrace", "-e", "quickstart:run_agent_fixed"]

    def out(**env: str) -> str:
        done = subprocess.run(
            command, cwd=quickstart, env=_colour_env(**env), capture_output=True, text=True, check=False
        )
        assert done.returncode == 1, done.stdout + done.stderr
        return done.stdout

    assert "\x1b[" not in out()  # piped
    assert "\x1b[" not in out(FORCE_COLOR="1", NO_COLOR="1")
    forced = out(FORCE_COLOR="1")  # what a terminal gets
    assert re.search(r"Status: \x1b\[[0-9;]*mDIVERGED\x1b\[0m", forced)
    assert re.search(r"Execution: \x1b\[[0-9;]*mCOMPLETED\x1b\[0m", forced)


AGENT_MARK = "AGENT-RUNNING"


def test_replay_prints_its_header_before_the_entrypoint_runs_on_a_terminal(quickstart: Path) -> None:
    (quickstart / "loud.py").write_text(
        "import quickstart\n\n\ndef run():\n"
        f"    print({AGENT_MARK!r}, flush=True)\n"
        "    return quickstart.run_agent()\n",
        encoding="utf-8",
    )
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [stepfork_executable(), "replay", "notify.sftrace", "-e", "loud:run"],
        cwd=quickstart,
        env=_colour_env(NO_COLOR="1"),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.DEVNULL,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert child.wait(timeout=120) == 0
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    assert text.index("Entrypoint    loud:run") < text.index(AGENT_MARK) < text.index("Dependency Calls")
    assert text.count("Stepfork Replay") == 1


def test_minimize_says_nothing_could_be_removed(quickstart: Path) -> None:
    result = run_cli(
        "minimize",
        "notify.sftrace",
        "-e",
        "quickstart:run_agent",
        "--expect-output",
        "expected.json",
        "-o",
        "minimal.sftrace",
        cwd=quickstart,
    )
    assert result.code == 0, result.text
    assert "Nothing could be removed: every recorded call is needed to reproduce the failure." in result.out
    assert "saved" not in result.out


def test_score_speaks_plainly(quickstart: Path) -> None:
    exported = run_cli(
        "export", "notify.sftrace", "-e", "quickstart:run_agent", "-o", "test_claim.py",
        "--expect-output", "expected.json", cwd=quickstart,
    )  # fmt: skip
    assert exported.code == 0, exported.text
    result = run_cli("score", "test_claim.py", cwd=quickstart)
    assert result.code == 0, result.text
    assert "claim-pinned" in result.out  # the term stays (docs/score.md)
    # the legend says what each row is as docs/score.md and the spec define them (NEWCOMER3 finding 9)
    assert "(a mutant is a wrong output: the recorded run (claim-drawn) or the expectation perturbed" in (
        result.out
    )
    assert "  claim the recorded run" in result.out
    assert "In plain words: the test fails for each wrong output tried" in result.out
