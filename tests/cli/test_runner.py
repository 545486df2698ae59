"""The runner's classification of pytest outcomes (spec cli-reference.txt "run", the measured table).

Each case writes a test file in the exporter's constant shape (so the runner can read TRACE_PATH and
ENTRYPOINT) with a body that produces one pytest outcome, and checks verdict, reason and receipt fields.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepfork.analysis.export import RunInputError, resolve_entrypoint_location, run_exported_test
from stepfork.analysis.export._receipt import REASONS, Receipt, bundle_digest

HEADER = """
from pathlib import Path
import pytest

HERE = Path(__file__).resolve().parent
TRACE_PATH = HERE / 'case.sftrace'
IMPORT_ROOT = HERE / '.'
ENTRYPOINT = 'agent_mod:run'
"""


@pytest.fixture
def work(tmp_path: Path, golden_copy) -> Path:
    golden_copy("successful_run", "case.sftrace")
    (tmp_path / "agent_mod.py").write_text("def run():\n    return 1\n", encoding="utf-8")
    return tmp_path


def _write(work: Path, body: str, name: str = "test_case.py") -> Path:
    path = work / name
    path.write_text(HEADER + body, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("body", "verdict", "reason"),
    [
        ("def test_ok():\n    assert True\n", "passed", None),
        ("def test_changed():\n    assert 1 == 2, 'behavior mismatch'\n", "failed", None),
        (
            "@pytest.fixture\ndef broken():\n    raise RuntimeError('no fixture')\n\n"
            "def test_x(broken):\n    pass\n",
            "could_not_execute",
            "check_error",
        ),
        ("raise ImportError('collection breaks')\n", "could_not_execute", "check_error"),
        ("def helper():\n    pass\n", "could_not_execute", "no_tests_collected"),
    ],
)
def test_pytest_outcomes_map_to_the_spec_verdicts(
    work: Path, body: str, verdict: str, reason: str | None
) -> None:
    receipt = run_exported_test(_write(work, body), receipt_path=work / "receipt.json")
    assert (receipt.verdict, receipt.reason) == (verdict, reason), receipt.detail
    written = json.loads((work / "receipt.json").read_text(encoding="utf-8"))
    assert written == receipt.to_dict()
    assert written["bundle_digest"] == bundle_digest(work / "case.sftrace")


def test_a_failed_check_reports_the_first_assertion_message(work: Path) -> None:
    receipt = run_exported_test(
        _write(work, "def test_changed():\n    assert 1 == 2, 'behavior mismatch at x'\n")
    )
    assert receipt.verdict == "failed"
    assert "behavior mismatch at x" in receipt.detail
    assert receipt.exit_code == 1


def test_a_timeout_stops_the_child_and_is_could_not_execute(work: Path) -> None:
    body = "import time\n\ndef test_slow():\n    time.sleep(60)\n"
    receipt = run_exported_test(_write(work, body), timeout_seconds=3)
    assert (receipt.verdict, receipt.reason, receipt.exit_status) == ("could_not_execute", "timeout", None)
    assert receipt.duration_ms < 30_000


def test_a_pytest_usage_error_is_pytest_error(work: Path) -> None:
    receipt = run_exported_test(_write(work, "def test_ok():\n    pass\n"), pytest_args=["--no-such-option"])
    assert (receipt.verdict, receipt.reason) == ("could_not_execute", "pytest_error")
    assert receipt.exit_status == 4


def test_a_hand_edited_non_literal_constant_without_bundle_is_check_error(work: Path) -> None:
    path = work / "test_case.py"
    path.write_text("TRACE_PATH = compute()\n\ndef test_ok():\n    pass\n", encoding="utf-8")
    receipt = run_exported_test(path)
    assert (receipt.verdict, receipt.reason) == ("could_not_execute", "check_error")
    assert "not" in receipt.detail


def test_a_missing_test_file_raises_run_input_error(tmp_path: Path) -> None:
    with pytest.raises(RunInputError) as caught:
        run_exported_test(tmp_path / "test_none.py")
    assert caught.value.code == "test_missing"


def test_no_receipt_is_written_by_the_test_itself_only_by_the_runner(work: Path) -> None:
    receipt_path = work / "out" / "receipt.json"
    body = f"def test_ok():\n    assert not Path({str(receipt_path)!r}).exists()\n"
    receipt = run_exported_test(_write(work, body), receipt_path=receipt_path)
    assert receipt.verdict == "passed"
    assert receipt_path.is_file()


@pytest.mark.parametrize(
    ("entrypoint", "fragment"),
    [
        ("agent_mod", "expected the form MODULE:FUNCTION"),
        ("agent_mod:", "expected the form MODULE:FUNCTION"),
        ("missing_mod:run", "cannot import module 'missing_mod'"),
        ("agent_mod:absent", "has no attribute 'absent'"),
    ],
)
def test_entrypoint_resolution_names_the_problem(work: Path, entrypoint: str, fragment: str) -> None:
    problem = resolve_entrypoint_location(entrypoint, work)
    assert problem is not None
    assert fragment in problem


def test_bindings_in_blocks_and_dotted_attributes_resolve(work: Path) -> None:
    (work / "blocks.py").write_text(
        "try:\n    import json\nexcept ImportError:\n    def fallback():\n        pass\n"
        "if True:\n    class Agent:\n        def run(self):\n            pass\n"
        "with open(__file__) as handle:\n    pass\n",
        encoding="utf-8",
    )
    for name in ("json", "fallback", "Agent.run", "handle"):
        assert resolve_entrypoint_location(f"blocks:{name}", work) is None, name
    assert resolve_entrypoint_location("blocks:run", work) is not None


def test_entrypoint_resolution_never_executes_the_module(work: Path) -> None:
    (work / "loud.py").write_text(
        "from pathlib import Path\nPath(__file__).with_name('EXECUTED').touch()\n\ndef run():\n    pass\n",
        encoding="utf-8",
    )
    assert resolve_entrypoint_location("loud:run", work) is None
    assert not (work / "EXECUTED").exists()


def test_packages_and_installed_modules_resolve(work: Path) -> None:
    package = work / "pkg" / "sub"
    package.mkdir(parents=True)
    (work / "pkg" / "__init__.py").write_text("raise SystemExit('never run')\n", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "agent.py").write_text("async def main():\n    pass\n", encoding="utf-8")
    assert resolve_entrypoint_location("pkg.sub.agent:main", work) is None
    assert resolve_entrypoint_location("json:dumps", None) is None


def test_receipt_exit_codes_and_reasons_are_the_spec_ones() -> None:
    assert {
        "bundle_missing",
        "bundle_unreadable",
        "check_error",
        "no_tests_collected",
        "pytest_unavailable",
        "pytest_error",
        "report_missing",
    } <= set(REASONS)
    base = {"exit_status": None, "bundle": None, "bundle_digest": None, "test": "t.py", "test_sha256": None}
    assert Receipt(verdict="passed", reason=None, **base).exit_code == 0
    assert Receipt(verdict="failed", reason=None, **base).exit_code == 1
    assert Receipt(verdict="could_not_execute", reason="timeout", **base).exit_code == 2


def test_builtin_modules_resolve(work: Path) -> None:
    # builtins and sys live in the interpreter, not on a path: "cannot import module 'builtins'" made an
    # exported test with RAISE_AS {'X': 'builtins:LookupError'} could_not_execute before it ran (s9-cli 3)
    assert resolve_entrypoint_location("builtins:LookupError", work) is None
    assert resolve_entrypoint_location("sys:exit", None) is None
    assert resolve_entrypoint_location("no_such_module:X", work) == "cannot import module 'no_such_module'"
