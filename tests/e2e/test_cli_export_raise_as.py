"""``stepfork export --raise-as TYPE=MODULE:CLASS`` (C8): the exported test of an agent that catches its own
exception around a tool that failed while recording passes under ``stepfork run``; without the option it
fails, because the agent's ``except`` does not catch a RecordedDependencyError. The mapping is a literal
``RAISE_AS`` constant that ``stepfork run`` and ``stepfork score`` read with ast; a hand edit of that
constant works too. ``stepfork run`` pre-checks the classes it names like the entrypoint.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from stepfork.analysis.export import read_exported_constants

from .conftest import GOLDEN, InProcess, Result, run_cli
from .raise_as_support import EXPECTED, copy_recorded, record_agent

RAISE_AS = "rl_agent.RateLimited=rl_agent:RateLimited"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_agent(tmp_path_factory.mktemp("rl") / "recorded")


@pytest.fixture
def work(recorded: Path, tmp_path: Path) -> Path:
    copy_recorded(recorded, tmp_path / "work")
    (tmp_path / "work" / "expected.json").write_text(json.dumps(EXPECTED), encoding="utf-8")
    return tmp_path / "work"


def export(work: Path, output: str, *extra: str, run: Callable[..., Result] = run_cli) -> Result:
    return run(
        "export",
        "rl.sftrace",
        "--pytest",
        "--entrypoint",
        "rl_agent:run",
        "--expect-output",
        "expected.json",
        "--output",
        output,
        *extra,
        cwd=work,
    )


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_with_raise_as_the_exported_test_passes_and_without_it_fails(work: Path) -> None:
    with_option = export(work, "test_with.py", "--raise-as", RAISE_AS)
    assert with_option.code == 0, with_option.text
    assert "Raise as:   rl_agent.RateLimited=rl_agent:RateLimited" in with_option.out.splitlines()
    assert with_option.err == ""
    without = export(work, "test_without.py")
    assert without.code == 0, without.text

    source = (work / "test_with.py").read_text(encoding="utf-8")
    assert read_exported_constants(source)["RAISE_AS"] == {"rl_agent.RateLimited": "rl_agent:RateLimited"}
    assert read_exported_constants((work / "test_without.py").read_text())["RAISE_AS"] is None
    call = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and n.keywords)
    assert {k.arg: ast.unparse(k.value) for k in call.keywords}["raise_as"] == "RAISE_AS"

    passed = run_cli("run", "test_with.py", "--json", cwd=work)
    assert passed.code == 0, passed.text
    assert json.loads(passed.out)["verdict"] == "passed"
    failed = run_cli("run", "test_without.py", cwd=work)
    assert failed.code == 1, failed.text
    assert "recorded tool failure for 'quote': rl_agent.RateLimited: slow" in failed.text

    # score reads the literals only: the mapping changes nothing it judges
    scores = [run_cli("score", name, cwd=work) for name in ("test_with.py", "test_without.py")]
    assert scores[0].code == scores[1].code == 1, scores[0].text
    assert scores[0].out.replace("test_with.py", "T") == scores[1].out.replace("test_without.py", "T")


def test_a_short_type_name_covers_the_qualified_recorded_type(work: Path) -> None:
    assert export(work, "test_short.py", "--raise-as", "RateLimited=rl_agent:RateLimited").code == 0
    assert run_cli("run", "test_short.py", cwd=work).code == 0


def test_a_hand_edited_raise_as_constant_is_honoured(work: Path) -> None:
    assert export(work, "test_edit.py").code == 0
    test = work / "test_edit.py"
    source = test.read_text(encoding="utf-8")
    edited = source.replace("RAISE_AS = None", "RAISE_AS = {'RateLimited': 'rl_agent:RateLimited'}", 1)
    assert edited != source
    test.write_text(edited, encoding="utf-8")
    result = run_cli("run", "test_edit.py", cwd=work)
    assert result.code == 0, result.text
    assert "Verdict: PASSED" in result.out


def test_a_raise_as_class_the_tree_cannot_resolve_is_could_not_execute(work: Path) -> None:
    assert export(work, "test_gone.py", "--raise-as", RAISE_AS).code == 0
    source = (work / "rl_agent.py").read_text(encoding="utf-8")
    (work / "rl_agent.py").write_text(source.replace("class RateLimited(", "class Throttled("), "utf-8")
    result = run_cli("run", "test_gone.py", "--json", cwd=work)
    assert result.code == 2, result.text
    receipt = json.loads(result.out)
    assert (receipt["verdict"], receipt["reason"], receipt["exit_status"]) == (
        "could_not_execute",
        "raise_as_unresolvable",
        None,
    )
    assert "'rl_agent.RateLimited'" in receipt["detail"]
    assert "has no attribute 'RateLimited'" in receipt["detail"]


def test_a_raise_as_function_where_a_class_goes_is_could_not_execute_not_a_regression(
    work: Path, in_process: InProcess
) -> None:
    # export imports nothing; the exported test resolves RAISE_AS when it runs, where a function is now
    # refused as replay refuses it (s9-cli 3): a check that never ran, not "the check ran and disagreed"
    value = "RateLimited=rl_agent:interrupt_factory"
    exported = export(work, "test_fn.py", "--raise-as", value, run=in_process)
    assert exported.code == 0, exported.text
    result = in_process("run", "test_fn.py", "--json", cwd=work)
    assert result.code == 2, result.text
    receipt = json.loads(result.out)
    assert (receipt["verdict"], receipt["reason"]) == ("could_not_execute", "raise_as_unresolvable")
    assert receipt["detail"] == (
        "raise_as['RateLimited']: 'rl_agent:interrupt_factory' is not a class but a function; expected an "
        "Exception subclass; the check cannot run, so this is not a regression"
    )


@pytest.mark.parametrize("value", ["builtins:KeyboardInterrupt", "builtins:GeneratorExit"])
def test_a_raise_as_base_exception_class_is_could_not_execute_not_a_regression(
    work: Path, in_process: InProcess, value: str
) -> None:
    # a class deriving from BaseException but not Exception: before, RaiseAs's ValueError failed the
    # exported test, read as "failed ... the check ran and disagreed", exit 1 (replay and check: exit 2)
    exported = export(work, "test_base.py", "--raise-as", f"RateLimited={value}", run=in_process)
    assert exported.code == 0, exported.text
    result = in_process("run", "test_base.py", "--json", cwd=work)
    assert result.code == 2, result.text
    receipt = json.loads(result.out)
    assert (receipt["verdict"], receipt["reason"]) == ("could_not_execute", "raise_as_unresolvable")
    name = value.partition(":")[2]
    assert receipt["detail"] == (
        f"raise_as['RateLimited']: must be an Exception subclass, not {name}: a BaseException that is not an "
        "Exception would stop the replay instead of reaching the agent's except clauses; the check cannot "
        "run, so this is not a regression"
    )


def test_a_type_matching_no_recorded_failure_is_written_with_a_warning(work: Path) -> None:
    result = export(work, "test_typo.py", "--raise-as", "RateLimit=rl_agent:RateLimited")
    assert result.code == 0, result.text
    assert result.err.strip().splitlines() == [
        "Warning: --raise-as RateLimit matches no recorded failure that this test's replay serves; "
        "it is written all the same."
    ]
    constants = read_exported_constants((work / "test_typo.py").read_text(encoding="utf-8"))
    assert constants["RAISE_AS"] == {"RateLimit": "rl_agent:RateLimited"}


# the first cell through the real executable, the others in-process (the same parser, another value)
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("rl_agent.RateLimited", "no '='"),
        ("=rl_agent:RateLimited", "TYPE must be"),
        ("RateLimited=rl_agent", "MODULE must be"),
        ("RateLimited=:RateLimited", "MODULE must be"),
        ("RateLimited=rl_agent:", "CLASS must be"),
        ("RateLimited=rl_agent:RateLimited()", "CLASS must be"),
        ("Rate Limited=rl_agent:RateLimited", "TYPE must be"),
    ],
)
def test_a_malformed_raise_as_value_is_one_line_exit_2(
    work: Path, value: str, fragment: str, in_process: InProcess
) -> None:
    run = run_cli if value == "rl_agent.RateLimited" else in_process
    result = export(work, "test_bad.py", "--raise-as", value, run=run)
    assert result.code == 2, result.text
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(f"Invalid --raise-as {value!r}: {fragment}")
    assert "expected TYPE=MODULE:CLASS" in lines[0]
    assert not (work / "test_bad.py").exists()


def test_two_keys_covering_one_recorded_type_are_refused(tmp_path: Path) -> None:
    # the reference's bundles record short types (ToolTimeout): a.ToolTimeout and b.ToolTimeout both cover it
    shutil.copytree(GOLDEN / "failed_tool_run.sftrace", tmp_path / "f.sftrace")
    result = run_cli(
        "export",
        "f.sftrace",
        "--pytest",
        "--entrypoint",
        "agent:run",
        "--raise-as",
        "a.ToolTimeout=a:ToolTimeout",
        "--raise-as",
        "b.ToolTimeout=b:ToolTimeout",
        cwd=tmp_path,
    )
    assert result.code == 2, result.text
    assert result.err.strip().splitlines() == [
        "--raise-as: raise_as keys ['a.ToolTimeout', 'b.ToolTimeout'] all match the recorded error type "
        "'ToolTimeout'; keep one"
    ]
    assert not list(tmp_path.glob("test_*.py"))


def test_the_same_type_twice_is_refused(work: Path) -> None:
    result = export(work, "test_twice.py", "--raise-as", RAISE_AS, "--raise-as", RAISE_AS)
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "--raise-as names the error type 'rl_agent.RateLimited' twice; give each TYPE once."
    ]
