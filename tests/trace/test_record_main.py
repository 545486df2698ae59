"""``stepfork.trace.record_main``: a recording script's ``COMMAND BUNDLE.sftrace [--overwrite]`` line.

The examples/ agents' ``main()`` is this one call; these tests hold the behaviour they had when each wrote
its own (one line on stderr and exit 2 for bad input, nothing replaced without ``--overwrite``) and the
typo hint newcomers lacked. In-process; tests/integrations/test_example_command_line.py runs one example.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepfork.trace import record, record_main


def _recorder(calls: list[tuple[str, bool]], result: Any = None) -> Any:
    def record_run(bundle: str, *, overwrite: bool = False) -> Any:
        calls.append((bundle, overwrite))
        return {"bundle": bundle, "overwrite": overwrite} if result is None else result

    return record_run


def _record_for_real(bundle: str, *, overwrite: bool = False) -> dict[str, int]:
    with record("agent", output=bundle, overwrite=overwrite, run_input=1) as session:
        session.set_output({"answer": 42})
    return {"answer": 42}


def test_it_calls_the_named_command_and_prints_its_result_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[str, bool]] = []
    assert record_main(["record", "run.sftrace"], {"record": _recorder(calls)}, prog="agent.py") == 0
    assert calls == [("run.sftrace", False)]
    out, err = capsys.readouterr()
    assert json.loads(out) == {"bundle": "run.sftrace", "overwrite": False}
    assert err == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["record", "run.sftrace", "--overwrite"],
        ["--overwrite", "record", "run.sftrace"],
        ["record", "--overwrite", "run.sftrace"],
    ],
)
def test_overwrite_counts_wherever_it_stands(argv: list[str]) -> None:
    calls: list[tuple[str, bool]] = []
    assert record_main(argv, {"record": _recorder(calls)}) == 0
    assert calls == [("run.sftrace", True)]


def test_each_command_runs_its_own_function(capsys: pytest.CaptureFixture[str]) -> None:
    first: list[tuple[str, bool]] = []
    second: list[tuple[str, bool]] = []
    commands = {"record": _recorder(first, "a"), "resume": _recorder(second, "b")}
    assert record_main(["resume", "r.sftrace"], commands) == 0
    assert (first, second) == ([], [("r.sftrace", False)])
    assert capsys.readouterr().out == '"b"\n'


def test_show_turns_the_result_into_the_printed_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert record_main(["record", "r.sftrace"], {"record": _recorder([], {"ok": False})}, show=str) == 0
    assert capsys.readouterr().out == "{'ok': False}\n"


def test_an_existing_bundle_is_refused_in_one_line_unless_overwrite_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = str(tmp_path / "run.sftrace")
    commands = {"record": _record_for_real}
    assert record_main(["record", bundle], commands) == 0
    events = tmp_path / "run.sftrace" / "events.jsonl"
    before = events.read_bytes()
    capsys.readouterr()

    assert record_main(["record", bundle], commands) == 2
    assert capsys.readouterr() == ("", f"{bundle} exists; pass --overwrite to replace it\n")
    assert events.read_bytes() == before

    assert record_main(["record", bundle, "--overwrite"], commands) == 0
    assert json.loads(capsys.readouterr().out) == {"answer": 42}
    assert events.read_bytes() != before


def test_another_storage_error_names_the_bundle_and_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(tmp_path / "run.json")  # not a .sftrace path: record() refuses it
    assert record_main(["record", target], {"record": _record_for_real}) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"Cannot record to {target}: ")
    assert err.count("\n") == 1
    assert not (tmp_path / "run.json").exists()


def test_a_failure_of_the_agent_itself_is_not_turned_into_a_usage_problem() -> None:
    def failing(bundle: str, *, overwrite: bool = False) -> None:
        raise RuntimeError("agent broke")

    with pytest.raises(RuntimeError, match="agent broke"):
        record_main(["record", "run.sftrace"], {"record": failing})


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["record", "r", "--overwite"], "agent.py: unknown option --overwite; did you mean --overwrite?"),
        # the typo took the bundle's place: still named, not "missing argument"
        (["record", "--overwite"], "agent.py: unknown option --overwite; did you mean --overwrite?"),
        # no abbreviations: a destructive option is spelled out
        (["--over", "record", "run.sftrace"], "agent.py: unknown option --over; did you mean --overwrite?"),
        (["--hlep"], "agent.py: unknown option --hlep; did you mean --help?"),
        (["record", "run.sftrace", "-x"], "agent.py: unknown option -x; the options are --overwrite, --help"),
        (["recrod", "run.sftrace"], "agent.py: unknown command recrod; did you mean record?"),
        (["resum", "run.sftrace"], "agent.py: unknown command resum; did you mean resume?"),
        # the beginning of both: no guess (abbreviations are not accepted), both named
        (["re", "run.sftrace"], "agent.py: unknown command re; did you mean record or resume?"),
        (["re", "--overwrite"], "agent.py: unknown command re; did you mean record or resume?"),
    ],
)
def test_a_typo_gets_one_line_naming_it_and_the_right_word_and_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[str, bool]] = []
    commands = {"record": _recorder(calls), "resume": _recorder(calls)}
    assert record_main(argv, commands, prog="agent.py") == 2
    assert capsys.readouterr() == ("", line + "\n")
    assert calls == []


def test_a_prefix_of_three_commands_names_the_three(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[str, bool]] = []
    commands = {"record": _recorder(calls), "replay": _recorder(calls), "resume": _recorder(calls)}
    assert record_main(["r", "run.sftrace"], commands, prog="agent.py") == 2
    line = "agent.py: unknown command r; did you mean record, replay or resume?\n"
    assert capsys.readouterr() == ("", line)
    assert calls == []


@pytest.mark.parametrize(
    "argv",
    [[], ["record"], ["record", "a.sftrace", "b.sftrace"], ["deploy", "run.sftrace"], ["run.sftrace"]],
)
def test_any_other_wrong_line_prints_the_usage_line_and_exits_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[str, bool]] = []
    commands = {"record": _recorder(calls), "resume": _recorder(calls)}
    assert record_main(argv, commands, prog="agent.py") == 2
    usage = "usage: python agent.py record|resume BUNDLE.sftrace [--overwrite]\n"
    assert capsys.readouterr() == ("", usage)
    assert calls == []


def test_a_bundle_after_a_double_dash_may_start_with_a_dash(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[str, bool]] = []
    assert record_main(["record", "--", "-odd.sftrace"], {"record": _recorder(calls)}) == 0
    assert calls == [("-odd.sftrace", False)]


def test_help_prints_the_usage_and_options_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[str, bool]] = []
    assert record_main(["--help"], {"record": _recorder(calls)}, prog="agent.py") == 0
    out, err = capsys.readouterr()
    assert out.startswith("usage: python agent.py record BUNDLE.sftrace [--overwrite]\n")
    assert "--overwrite" in out.split("options:")[1]
    assert (err, calls) == ("", [])


def test_no_command_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="at least one command"):
        record_main(["record", "run.sftrace"], {})
