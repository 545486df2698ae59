"""An example's command line as a newcomer types it: a mistyped ``--overwrite`` gets one line naming it and
the right option, exit 2, and nothing is written (``stepfork.trace.record_main``; its other cases are in
tests/trace/test_record_main.py). One subprocess, on the dependency-free asyncio example."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_mistyped_overwrite_names_the_option_meant_and_writes_nothing(tmp_path: Path) -> None:
    shutil.copy2(EXAMPLES / "asyncio_fanout" / "fanout_agent.py", tmp_path / "fanout_agent.py")
    done = subprocess.run(
        [sys.executable, "fanout_agent.py", "record", "run.sftrace", "--overwite"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == "fanout_agent.py: unknown option --overwite; did you mean --overwrite?\n"
    assert done.stdout == ""
    assert not (tmp_path / "run.sftrace").exists()
