"""``hatch run demo`` (examples/quickstart/demo.py) tells the whole story and leaves the tree untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import QUICKSTART, REPO, cli_env


def _tree_state() -> dict[str, float]:
    return {str(p.relative_to(QUICKSTART)): p.stat().st_mtime for p in QUICKSTART.rglob("*")}


def _demo(out_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / "quickstart" / "demo.py"), "--output-dir", str(out_dir)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=600,
        check=False,
    )


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_demo_runs_every_step_as_the_story_says(tmp_path: Path) -> None:
    before = _tree_state()
    out_dir = tmp_path / "demo"
    done = _demo(out_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for text in (
        "Recorded behavior: MATCHED",
        "Recorded behavior: DIVERGED",
        "Verdict: FAILED",
        "Verdict: PASSED",
        "Validation passed.",
        "Stepfork Trace Inspector",
    ):
        assert text in out
    assert (out_dir / "receipts" / "buggy.json").is_file()
    assert (out_dir / "receipts" / "fixed.json").is_file()
    assert _tree_state() == before


@pytest.mark.slow  # long end-to-end story: `hatch run slow:test` (tests/conftest.py)
def test_the_demo_runs_again_into_the_directory_it_made(tmp_path: Path) -> None:
    out_dir = tmp_path / "demo"
    assert _demo(out_dir).returncode == 0
    (out_dir / "notes.txt").write_text("mine", encoding="utf-8")  # a file of the user's, beside the demo's
    again = _demo(out_dir)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Verdict: PASSED" in again.stdout
    assert (out_dir / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_a_non_empty_directory_the_demo_did_not_make_is_refused_untouched(tmp_path: Path) -> None:
    out_dir = tmp_path / "mine"
    out_dir.mkdir()
    (out_dir / "expected.json").write_text('{"mine": true}', encoding="utf-8")
    done = _demo(out_dir)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"demo: {out_dir.resolve()} is not empty and was not made by this demo; give a new or empty "
        "directory (or omit --output-dir for a temporary one)"
    ]
    assert [p.name for p in out_dir.iterdir()] == ["expected.json"]
    assert (out_dir / "expected.json").read_text(encoding="utf-8") == '{"mine": true}'


def test_an_output_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("mine", encoding="utf-8")
    done = _demo(target)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"demo: {target.resolve()} exists and is not a directory"]
    assert target.read_text(encoding="utf-8") == "mine"
