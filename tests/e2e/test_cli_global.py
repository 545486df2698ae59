"""Global behaviour of the ``stepfork`` executable: version, help, ``python -m stepfork``, lazy imports,
one-line errors (spec cli-reference.txt "Global options"; issue 4)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import cli_env, run_cli, stepfork_executable

HEAVY = ("rich", "pydantic", "typer", "stepfork.replay", "stepfork.analysis", "orjson")


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_package_version(flag: str) -> None:
    from stepfork.trace import __version__

    result = run_cli(flag)
    assert result.code == 0
    assert result.out == f"stepfork {__version__}\n"


def test_python_dash_m_stepfork_is_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "stepfork", "--version"],
        capture_output=True,
        text=True,
        env=cli_env(),
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout == run_cli("--version").out
    helped = subprocess.run(
        [sys.executable, "-m", "stepfork", "--help"],
        capture_output=True,
        text=True,
        env=cli_env(),
        check=False,
    )
    assert helped.returncode == 0
    assert "validate" in helped.stdout


def test_version_imports_no_rich_pydantic_typer_or_replay_stack() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", stepfork_executable(), "--version"],
        capture_output=True,
        text=True,
        env=cli_env(),
        check=False,
    )
    assert done.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    heavy = sorted(m for m in imported if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []
    assert "stepfork.trace._version" in imported


def test_help_does_not_import_rich_or_the_libraries() -> None:
    code = (
        "import sys\n"
        "from stepfork.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('rich', 'pydantic', 'typer', 'click') or "
        "m.startswith(('stepfork.replay', 'stepfork.analysis'))]\n"
        "sys.stderr.write(repr(sorted(heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), check=False
    )
    assert done.stderr.strip() == "[]"


def test_the_help_snapshot_is_what_typer_renders_today() -> None:
    # `stepfork --help` prints a snapshot so it need not import typer; it must never drift from the app.
    rendered = subprocess.run(
        [stepfork_executable(), "--help"],
        capture_output=True,
        text=True,
        env={**cli_env(), "STEPFORK_RENDER_HELP": "1"},
        check=False,
    )
    assert rendered.returncode == 0
    fast = run_cli("--help")
    assert fast.code == 0
    assert fast.out == rendered.stdout, "stale snapshot: run python scripts/update_cli_help.py"


def test_help_lists_the_global_options_and_the_commands() -> None:
    result = run_cli("--help")
    assert result.code == 0
    for text in ("--version", "-V", "--install-completion", "--show-completion", "--help"):
        assert text in result.out
    for command in ("validate", "inspect", "replay", "export", "run"):
        assert command in result.out


@pytest.mark.parametrize("command", ["validate", "inspect", "replay", "export", "run"])
def test_each_command_has_help(command: str) -> None:
    result = run_cli(command, "--help")
    assert result.code == 0
    assert "Usage: stepfork " + command in result.out


def test_no_arguments_shows_help_and_an_unknown_command_is_a_usage_error() -> None:
    assert "Usage:" in run_cli().text
    unknown = run_cli("teleport")
    assert unknown.code == 2
    assert "Traceback" not in unknown.text


def test_show_completion_prints_a_completion_script(monkeypatch: pytest.MonkeyPatch) -> None:
    # Typer detects the parent shell unless told not to; the test names the shell so it does not
    # depend on the shell that happened to start pytest.
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    result = run_cli("--show-completion", "bash")
    assert result.code == 0
    assert "_stepfork_completion" in result.out
