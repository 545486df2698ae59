"""``stepfork replay --raise-as TYPE=MODULE:CLASS`` (C8; docs/decisions.md, the rows on `--raise-as`).

The class is imported like the entrypoint, from the user's tree; the report judges what the entrypoint then
does by the usual rules (spec replay.txt "CLI", cli-reference.txt "replay"): a caught failure that
completes as recorded is MATCHED (exit 0); one that completes where the recording failed is DIVERGED
(exit 1); an escaping failure of the recorded type is REPRODUCED FAILURE (exit 0). A class that cannot be
imported is exit 2 in the entrypoint's two-line style; a malformed value is one line, exit 2.

The first cell of each matrix and each test's first replay run the real ``stepfork`` (each exit 0, 1, 2 and
each message style from a process of its own); the other cells and second replays prove the same wiring
through the console script's ``main`` in-process.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import GOLDEN, InProcess, Result, run_cli
from .raise_as_support import copy_recorded, record_agent

RAISE_AS = "rl_agent.RateLimited=rl_agent:RateLimited"
SHORT = "RateLimited=rl_agent:RateLimited"
TIMEOUT = "ToolTimeout=flights:ToolTimeout"

FLIGHTS = """
from stepfork import trace_tool


class ToolTimeout(Exception):
    pass


@trace_tool
def flight_search(api_key: str, query: str) -> dict:
    raise RuntimeError("the flight service must not be called during frozen replay")


def search():
    return flight_search(api_key="sk-live-0123456789abcdef", query="Kathmandu flights")


def search_with_fallback():
    try:
        return search()
    except ToolTimeout:
        return {"status": "fallback"}
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_agent(tmp_path_factory.mktemp("rl") / "recorded")


@pytest.fixture
def work(recorded: Path, tmp_path: Path) -> Path:
    return copy_recorded(recorded, tmp_path / "work")


@pytest.fixture
def flights(tmp_path: Path) -> Path:
    """The reference's failed_tool_run (a ToolTimeout recorded under its short name) and an agent for it."""
    shutil.copytree(GOLDEN / "failed_tool_run.sftrace", tmp_path / "failed.sftrace")
    (tmp_path / "flights.py").write_text(textwrap.dedent(FLIGHTS), encoding="utf-8")
    return tmp_path


def replay(
    cwd: Path, bundle: str, entrypoint: str, *extra: str, run: Callable[..., Result] = run_cli
) -> Result:
    return run("replay", bundle, "--entrypoint", entrypoint, *extra, cwd=cwd)


def _field(out: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}:? +(.*)$", out, re.MULTILINE)
    assert match is not None, f"no {label!r} line in:\n{out}"
    return match.group(1).strip()


def test_a_caught_failure_of_a_completed_recording_is_matched_exit_0(work: Path) -> None:
    result = replay(work, "rl.sftrace", "rl_agent:run", "--raise-as", RAISE_AS)
    assert result.code == 0, result.text
    assert _field(result.out, "Raise as") == "rl_agent.RateLimited=rl_agent:RateLimited"
    assert "1. tool quote (substituted, recorded error)" in result.out
    assert _field(result.out, "Dependency matching") == "COMPLETE"
    assert _field(result.out, "Execution") == "COMPLETED"
    assert _field(result.out, "Recorded behavior") == "MATCHED"
    assert _field(result.out, "Status") == "COMPLETED"
    assert _field(result.out, "Final result") == '{"status":"degraded","why":"slow"}'
    assert result.err == ""


def test_without_raise_as_the_same_agent_diverges_exit_1(work: Path) -> None:
    result = replay(work, "rl.sftrace", "rl_agent:run")
    assert result.code == 1, result.text
    assert "Raise as" not in result.out
    assert _field(result.out, "Recorded behavior") == "DIVERGED"
    assert "got stepfork.replay.errors.RecordedDependencyError" in result.out


def test_the_agents_own_failure_path_reproduces_the_recorded_failure(
    work: Path, in_process: InProcess
) -> None:
    """The recorded run failed with AgentFailed, raised by the agent's except clause: only with raise_as
    does replay take that path, so only then is the failure reproduced."""
    with_option = replay(work, "escalate.sftrace", "rl_agent:run_escalating", "--raise-as", SHORT)
    assert with_option.code == 0, with_option.text
    assert _field(with_option.out, "Execution") == "RAISED rl_agent.AgentFailed: gave up after a rate limit"
    assert _field(with_option.out, "Recorded behavior") == "REPRODUCED FAILURE"
    assert _field(with_option.out, "Status") == "REPRODUCED FAILURE"
    without = replay(work, "escalate.sftrace", "rl_agent:run_escalating", run=in_process)
    assert without.code == 1, without.text
    assert "expected failure rl_agent.AgentFailed" in without.out


def test_an_escaping_mapped_failure_is_reproduced_under_the_users_class(flights: Path) -> None:
    result = replay(flights, "failed.sftrace", "flights:search", "--raise-as", TIMEOUT)
    assert result.code == 0, result.text
    assert _field(result.out, "Execution") == "RAISED flights.ToolTimeout: flight_search timed out"
    assert _field(result.out, "Recorded behavior") == "REPRODUCED FAILURE"


def test_a_caught_failure_of_a_failed_recording_completes_and_diverges_exit_1(
    flights: Path, in_process: InProcess
) -> None:
    with_option = replay(flights, "failed.sftrace", "flights:search_with_fallback", "--raise-as", TIMEOUT)
    assert with_option.code == 1, with_option.text
    assert _field(with_option.out, "Dependency matching") == "COMPLETE"
    assert _field(with_option.out, "Execution") == "COMPLETED"
    assert _field(with_option.out, "Recorded behavior") == "DIVERGED"
    assert "expected failure ToolTimeout, got completion" in with_option.out
    # without the mapping the fallback never runs: the recorded failure escapes and is "reproduced"
    without = replay(flights, "failed.sftrace", "flights:search_with_fallback", run=in_process)
    assert without.code == 0, without.text
    assert _field(without.out, "Recorded behavior") == "REPRODUCED FAILURE"


# each matrix: the first cell through the real executable, the others in-process
@pytest.mark.parametrize(
    ("value", "detail"),
    [
        ("RateLimited=rl_agent:Missing", "module 'rl_agent' has no attribute 'Missing'"),
        ("RateLimited=no_such_module:RateLimited", "cannot import module 'no_such_module'"),
    ],
)
def test_a_class_that_cannot_be_imported_is_exit_2_like_an_entrypoint(
    work: Path, value: str, detail: str, in_process: InProcess
) -> None:
    run = run_cli if value == "RateLimited=rl_agent:Missing" else in_process
    result = replay(work, "rl.sftrace", "rl_agent:run", "--raise-as", value, run=run)
    assert result.code == 2, result.text
    lines = result.err.strip().splitlines()
    assert len(lines) == 2, result.err
    assert lines[0] == "Unable to resolve --raise-as class for RateLimited."
    assert lines[1].startswith(detail), result.err
    assert result.out == ""


@pytest.mark.parametrize(
    ("target", "detail"),
    [
        ("rl_agent:NotAnError", "'rl_agent:NotAnError' is a class that does not derive from BaseException"),
        ("builtins:len", "'builtins:len' is not a class but a builtin_function_or_method"),
        ("rl_agent:interrupt_factory", "'rl_agent:interrupt_factory' is not a class but a function"),
    ],
)
def test_what_is_not_an_exception_class_is_exit_2_like_a_class_that_cannot_be_imported(
    work: Path, target: str, detail: str, in_process: InProcess
) -> None:
    # --raise-as TYPE=MODULE:CLASS names a class: a function was accepted and called as a factory at the
    # first recorded failure (builtins:len too), a warning and the plain error then (s9-cli 3)
    run = run_cli if target == "builtins:len" else in_process
    result = replay(work, "rl.sftrace", "rl_agent:run", "--raise-as", f"RateLimited={target}", run=run)
    assert result.code == 2, result.text
    assert result.err.strip().splitlines() == [
        "Unable to resolve --raise-as class for RateLimited.",
        f"{detail}; expected an Exception subclass",
    ]
    assert result.out == ""


@pytest.mark.parametrize(
    "value",
    ["RateLimited", "RateLimited=rl_agent", "RateLimited=rl_agent:", "=rl_agent:RateLimited", "X=a-b:C"],
)
def test_a_malformed_value_is_one_line_exit_2_before_anything_runs(
    work: Path, value: str, in_process: InProcess
) -> None:
    run = run_cli if value == "RateLimited" else in_process
    result = replay(work, "rl.sftrace", "rl_agent:run", "--raise-as", value, run=run)
    assert result.code == 2, result.text
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(f"Invalid --raise-as {value!r}: ")
    assert result.out == ""


def test_two_keys_covering_one_recorded_type_are_exit_2(flights: Path) -> None:
    result = replay(
        flights,
        "failed.sftrace",
        "flights:search",
        "--raise-as",
        "a.ToolTimeout=flights:ToolTimeout",
        "--raise-as",
        "b.ToolTimeout=flights:ToolTimeout",
    )
    assert result.code == 2, result.text
    assert len(result.err.strip().splitlines()) == 1
    assert "all match the recorded error type 'ToolTimeout'" in result.err


def test_a_type_matching_no_recorded_failure_is_a_warning(work: Path) -> None:
    result = replay(work, "rl.sftrace", "rl_agent:run", "--raise-as", "RateLimit=rl_agent:RateLimited")
    assert result.code == 1, result.text  # the typo leaves the failure unmapped: the agent diverges
    assert result.err.strip().splitlines() == [
        "Warning: --raise-as RateLimit matches no recorded failure in this replay."
    ]


def test_a_class_that_cannot_be_combined_warns_in_one_line_each(work: Path) -> None:
    result = replay(work, "rl.sftrace", "rl_agent:run_uncaught", "--raise-as", "RateLimited=rl_agent:Sealed")
    assert result.code == 1, result.text  # the recording completed; this run raised
    assert _field(result.out, "Execution") == "RAISED rl_agent.Sealed: slow"
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err  # one line for the class, not one more at the raise
    assert lines[0].startswith("Warning: raise_as['RateLimited'] (Sealed) cannot be combined"), lines
    assert "warnings.warn" not in result.err


@pytest.mark.parametrize(
    "target",
    ["builtins:BaseException", "builtins:KeyboardInterrupt", "builtins:SystemExit", "rl_agent:Cancelled"],
)
def test_a_class_that_is_not_an_exception_subclass_is_one_line_exit_2(
    work: Path, target: str, in_process: InProcess
) -> None:
    run = run_cli if target == "builtins:BaseException" else in_process
    result = replay(work, "rl.sftrace", "rl_agent:run", "--raise-as", f"RateLimited={target}", run=run)
    assert result.code == 2, result.text
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    name = target.split(":")[1]
    assert lines[0].startswith(f"raise_as['RateLimited'] must be an Exception subclass, not {name}"), lines
    assert result.out == ""
