"""The script form of export (``stepfork export BUNDLE -- python agent.py ARGS``, issue 11) in-process:
the constants it writes, what it refuses, and ``stepfork run``'s check of the program before pytest starts.
The real CLI round trip (record, export, run PASSED) is tests/integrations/test_script_agent.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepfork.analysis.export import (
    ExportError,
    export_pytest_test,
    generate_pytest_source,
    read_exported_constants,
    run_exported_test,
)
from stepfork.trace import record, trace_tool


@trace_tool
def lookup(city: str) -> str:
    return city


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    path = tmp_path / "run.sftrace"
    with record("script", output=path):
        lookup("Paris")
    return path


def test_the_command_and_the_network_options_are_literals(bundle: Path, tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("print('hi')\n")
    command = ["python", "agent.py", "Paris", 'it\'s "quoted"\n']
    out = tmp_path / "test_script.py"
    result = export_pytest_test(
        trace_path=bundle,
        entrypoint="",
        output_path=out,
        command=command,
        import_root=tmp_path,
        network="open",
        allow_hosts=["db.internal"],
    )
    assert (result.has_expectation, result.expectation_source) == (False, "none")
    constants = read_exported_constants(out.read_text())
    assert constants["COMMAND"] == command  # data stays data
    assert (constants["ENTRYPOINT"], constants["NETWORK"], constants["ALLOW_HOSTS"]) == (
        None,
        "open",
        ["db.internal"],
    )
    assert (constants["TRACE_PATH"], constants["IMPORT_ROOT"]) == ("run.sftrace", ".")
    assert "run_script_regression_case(" in out.read_text()


def test_raise_as_is_refused_with_a_command_and_the_expectations_are_written(
    bundle: Path, tmp_path: Path
) -> None:
    with pytest.raises(ExportError, match="not supported with -- python SCRIPT") as info:
        export_pytest_test(
            trace_path=bundle,
            entrypoint="",
            output_path=tmp_path / "t.py",
            command=["python", "agent.py"],
            raise_as={"app.Boom": "app:Boom"},
        )
    assert info.value.code == "invalid_option"
    out = tmp_path / "test_expected.py"
    result = export_pytest_test(
        trace_path=bundle,
        entrypoint="",
        output_path=out,
        command=["python", "agent.py"],
        expectation={"answer": 1},
        trajectory_expectation={"called": ["lookup"]},
    )
    assert (result.has_expectation, result.expectation_source) == (True, "file")
    constants = read_exported_constants(out.read_text())
    assert (constants["EXPECTATION"], constants["HAS_EXPECTATION"]) == ({"answer": 1}, True)
    assert constants["TRAJECTORY_EXPECTATION"] == {"called": ["lookup"]}
    assert "expectation=EXPECTATION" in out.read_text()


def test_run_says_the_program_is_missing_before_pytest_starts(bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "test_gone.py"
    export_pytest_test(
        trace_path=bundle, entrypoint="", output_path=out, command=["python", "gone.py"], import_root=tmp_path
    )
    receipt = run_exported_test(out)
    assert (receipt.verdict, receipt.reason) == ("could_not_execute", "entrypoint_unresolvable")
    assert "gone.py" in receipt.detail


SECRET = "sk-proj-Zabcdefghijklmnopqrstuvwxyz012345"


def test_a_secret_on_the_command_line_is_refused_by_export_and_never_written(
    bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CASES C5: nothing secret reaches an exported test. Written redacted, the test would run the program
    # with "[REDACTED]" as its argument; so the export is refused, naming where the secret is.
    from typer.testing import CliRunner

    from stepfork.cli.app import build_app

    (tmp_path / "agent.py").write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "test_agent.py"
    args = ["export", str(bundle), "-o", str(out), "--", "python", "agent.py", "--api-key", SECRET]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 2
    assert "argument 3 of the command holds a secret" in result.output
    assert SECRET not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "index"),
    [
        (["--api-key", SECRET], 3),  # a credential pattern
        ([f"--api-key={SECRET}"], 2),
        (["--password", "hunter2-plain"], 3),  # the value after an option named like a sensitive key
        (["-v", "--token", "opaque"], 4),
        (["--db", "postgres://app:s3cretpw@db/x"], 3),  # a password in a URL
    ],
)
def test_the_library_refuses_a_secret_on_the_command_line_and_writes_nothing(
    bundle: Path, tmp_path: Path, args: list[str], index: int
) -> None:
    # CASES C5 for library users: export_pytest_test refuses what `stepfork export -- ...` refuses (one
    # rule, command_secret_problem), before the bundle is read and with the secret never in the message.
    out = tmp_path / "test_agent.py"
    with pytest.raises(ExportError, match=f"argument {index} of the command holds a secret") as info:
        export_pytest_test(
            trace_path=tmp_path / "never-read.sftrace",
            entrypoint="",
            output_path=out,
            command=["python", "agent.py", *args],
            import_root=tmp_path,
        )
    assert info.value.code == "secret_in_command"
    assert all(arg not in str(info.value) for arg in args[-1:])
    assert not out.exists()
    with pytest.raises(ExportError, match="holds a secret"):  # the source generator refuses it too
        generate_pytest_source(
            trace_path=bundle, output_path=out, entrypoint="", command=["python", "agent.py", *args]
        )


def test_options_and_values_that_are_not_secrets_are_exported(bundle: Path, tmp_path: Path) -> None:
    command = [
        "python",
        "agent.py",
        "--token-file",
        "tok.txt",
        "--secret",
        "--verbose",
        "--key",
        "k1",
        "cookie",
    ]
    out = tmp_path / "test_agent.py"
    export_pytest_test(
        trace_path=bundle, entrypoint="", output_path=out, command=command, import_root=tmp_path
    )
    assert read_exported_constants(out.read_text())["COMMAND"] == command


def test_a_replayed_program_s_command_line_is_shown_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from stepfork.cli.scriptrun import run_script_regression_case

    (tmp_path / "agent.py").write_text("import sys\nprint(len(sys.argv))\n")
    empty = tmp_path / "empty.sftrace"
    with record("agent", output=empty):  # a program that calls nothing: its command line is the point
        pass
    run_script_regression_case(
        trace_path=empty, command=["python", "agent.py", "--api-key", SECRET], cwd=tmp_path
    )
    shown = capsys.readouterr().out
    assert "python agent.py --api-key [REDACTED]" in shown
    assert SECRET not in shown
