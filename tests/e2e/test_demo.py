"""``hatch run demo`` (examples/quickstart/demo.py) tells the whole story and leaves the tree untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import QUICKSTART, REPO, cli_env


def _tree_state() -> dict[str, float]:
    return {str(p.relative_to(QUICKSTART)): p.stat().st_mtime for p in QUICKSTART.rglob("*")}


def test_the_demo_runs_every_step_as_the_story_says(tmp_path: Path) -> None:
    before = _tree_state()
    out_dir = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "quickstart" / "demo.py"), "--output-dir", str(out_dir)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=600,
        check=False,
    )
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
