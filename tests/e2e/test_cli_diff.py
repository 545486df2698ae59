"""`stepfork diff` end to end in a subprocess (spec/cli-reference.txt "diff"): output, exit codes 0/1/2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepfork.trace import record, trace_tool

from ..conftest import GOLDEN

STEPFORK = str(Path(sys.executable).parent / "stepfork")


def stepfork(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STEPFORK, *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


@trace_tool
def search(query: str) -> list[str]:
    return ["a", "b"]


@trace_tool
def log_event(name: str) -> bool:
    return True


def _record(path: Path, *, insert_log: bool = False, answer: Any = "a") -> Path:
    with record("search-agent", output=path) as session:
        hits = search("shoes")
        if insert_log:
            log_event("searched")
        search("boots")
        session.set_output({"answer": answer, "hits": hits})
    return path


def test_golden_pair_prints_the_price_change_and_exits_1() -> None:
    proc = stepfork("diff", GOLDEN / "diff_baseline.sftrace", GOLDEN / "diff_changed.sftrace")
    assert proc.returncode == 1, proc.stderr
    assert "  output.price (first)\n    baseline:  320\n    candidate: 450" in proc.stdout
    assert "Steps: 2 total (2 changed, 0 added, 0 removed, 0 unchanged)" in proc.stdout
    assert proc.stdout.rstrip().endswith("Result: BEHAVIOR CHANGED")


def test_equivalent_runs_exit_0(tmp_path: Path) -> None:
    proc = stepfork("diff", _record(tmp_path / "a.sftrace"), _record(tmp_path / "b.sftrace"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Steps: 3 total (0 changed, 0 added, 0 removed, 3 unchanged)" in proc.stdout


def test_an_inserted_call_is_one_added_step(tmp_path: Path) -> None:
    proc = stepfork("diff", _record(tmp_path / "a.sftrace"), _record(tmp_path / "b.sftrace", insert_log=True))
    assert proc.returncode == 1
    assert "+ tool log_event" in proc.stdout
    assert "(0 changed, 1 added, 0 removed, 3 unchanged)" in proc.stdout


def test_json_output_is_machine_readable(tmp_path: Path) -> None:
    proc = stepfork(
        "diff", _record(tmp_path / "a.sftrace"), _record(tmp_path / "b.sftrace", answer=None), "--json"
    )
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["equivalent"] is False
    (change,) = [c for step in data["steps"] for c in step["changes"]]
    assert change == {"path": "output.answer", "kind": "changed", "expected": "a", "actual": None}


@pytest.mark.parametrize("which", ["baseline", "candidate"])
def test_an_unreadable_bundle_exits_2(tmp_path: Path, which: str) -> None:
    good, bad = GOLDEN / "diff_baseline.sftrace", tmp_path / "missing.sftrace"
    proc = stepfork("diff", *((bad, good) if which == "baseline" else (good, bad)))
    assert proc.returncode == 2
    assert f"Unreadable {which} bundle {bad}: " in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("pattern", ["bad[", "output.choices[0", "output.choices[x].id", "a]", ""])
def test_an_ignore_path_with_a_stray_bracket_is_refused_exit_2(pattern: str) -> None:
    # before, it was taken as a literal that matched nothing: a typo that silently ignored nothing
    good = GOLDEN / "diff_baseline.sftrace"
    proc = stepfork("diff", good, good, "--ignore", pattern, "--json")
    assert proc.returncode == 2
    why = "a '[' must be part of [*] (any index) or [N] (index N), as in output.choices[*].message"
    why = why if pattern else "an empty path"
    assert proc.stderr.strip().splitlines() == [f"invalid ignore path {pattern!r}: {why}"]
    assert json.loads(proc.stdout)["error"] == "invalid_option"


def test_ignore_paths_with_indexes_and_wildcards_are_taken() -> None:
    good = GOLDEN / "diff_baseline.sftrace"
    paths = ("--ignore", "output.choices[*].message", "--ignore", "input.items[0].**")
    proc = stepfork("diff", good, good, *paths)
    assert proc.returncode == 0, proc.stderr
