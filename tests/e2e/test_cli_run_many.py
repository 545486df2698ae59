"""``stepfork run`` over many exported tests: several files or a directory, ``--shard K/N``, one receipt per
test and a summary; exported tests are safe under ``pytest -n`` (issue 17)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import run_cli

# many exported tests run through pytest, sharded and under xdist: `hatch run slow:test` (tests/conftest.py)
pytestmark = pytest.mark.slow

# quickstart:run_agent_fixed passes against expected.json; quickstart:run_agent (the bug) fails
ENTRYPOINTS = {
    "test_a_fixed.py": "quickstart:run_agent_fixed",
    "test_b_fixed.py": "quickstart:run_agent_fixed",
    "test_c_buggy.py": "quickstart:run_agent",
    "test_d_fixed.py": "quickstart:run_agent_fixed",
    "test_e_fixed.py": "quickstart:run_agent_fixed",
}


@pytest.fixture
def suite(quickstart: Path) -> Path:
    """Five exported tests in quickstart/regressions (one of them fails)."""
    (quickstart / "regressions").mkdir()
    for name, entrypoint in ENTRYPOINTS.items():
        done = run_cli(
            "export",
            "notify.sftrace",
            "--pytest",
            "--entrypoint",
            entrypoint,
            "--expect-output",
            "expected.json",
            "--output",
            f"regressions/{name}",
            cwd=quickstart,
        )
        assert done.code == 0, done.text
    return quickstart


def test_a_directory_runs_every_test_with_a_receipt_each(suite: Path) -> None:
    done = run_cli("run", "regressions", "--receipts", "receipts", "--json", cwd=suite)
    assert done.code == 1, done.text
    summary = json.loads(done.out)
    assert summary["counts"] == {"passed": 4, "failed": 1}
    assert [Path(r["test"]).name for r in summary["receipts"]] == sorted(ENTRYPOINTS)
    written = sorted((suite / "receipts").glob("*.json"))
    assert len(written) == 5
    verdicts = {
        Path(json.loads(p.read_text())["test"]).name: json.loads(p.read_text())["verdict"] for p in written
    }
    assert verdicts["test_c_buggy.py"] == "failed"
    human = run_cli("run", "regressions/test_a_fixed.py", "regressions/test_b_fixed.py", cwd=suite)
    assert human.code == 0, human.text
    assert "Stepfork Run: 2 test(s)" in human.out
    assert "Verdicts: passed 2" in human.out


def test_shards_are_disjoint_deterministic_and_cover_every_test(suite: Path) -> None:
    seen: list[str] = []
    for k in (1, 2, 3):
        first = run_cli("run", "regressions", "--shard", f"{k}/3", "--json", cwd=suite)
        again = run_cli("run", "regressions", "--shard", f"{k}/3", "--json", cwd=suite)
        names = [Path(r["test"]).name for r in json.loads(first.out)["receipts"]]
        assert names == [Path(r["test"]).name for r in json.loads(again.out)["receipts"]]
        assert json.loads(first.out)["shard"] == f"{k}/3"
        assert json.loads(first.out)["total"] == 5
        assert first.code == (1 if "test_c_buggy.py" in names else 0), first.text
        seen += names
    assert sorted(seen) == sorted(ENTRYPOINTS)
    for bad in ("0/3", "4/3", "x"):
        done = run_cli("run", "regressions", "--shard", bad, cwd=suite)
        assert done.code == 2
        assert "--shard" in done.err


def test_one_test_options_are_refused_with_several(suite: Path) -> None:
    done = run_cli("run", "regressions", "--receipt", "r.json", cwd=suite)
    assert done.code == 2
    assert "--receipts DIR" in done.err
    done = run_cli("run", "no-such-dir", "regressions", cwd=suite)
    assert done.code == 2
    assert "test not found" in done.err


def test_exported_tests_are_safe_under_pytest_xdist(suite: Path) -> None:
    (suite / "regressions" / "test_c_buggy.py").unlink()
    tests = sorted(str(p) for p in (suite / "regressions").glob("test_*.py"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(suite),
            *tests,
        ],
        cwd=suite,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
