"""Commands that write a bundle never replace a user's directory, even with --overwrite (issue 14).

``fork`` and ``minimize`` refuse before any replay (exit 2, one line naming what is there); the pytest
plugin's ``--stepfork-record`` (which always overwrites) errors the test instead of wiping the directory.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import run_cli


def _user_dir(where: Path) -> Path:
    notes = where / "notes.sftrace"
    notes.mkdir()
    (notes / "notes.txt").write_text("keep me\n")
    return notes


def test_fork_with_overwrite_refuses_a_user_directory(quickstart: Path) -> None:
    notes = _user_dir(quickstart)
    result = run_cli(
        "fork", "notify.sftrace", "--step", "1", "-e", "quickstart:run_agent", "-o", notes, "--overwrite",
        cwd=quickstart,
    )  # fmt: skip
    assert result.code == 2, result.text
    assert "not a Stepfork bundle" in result.err
    assert "notes.txt" in result.err
    assert "Traceback" not in result.text
    assert sorted(p.name for p in notes.iterdir()) == ["notes.txt"]


def test_minimize_with_overwrite_refuses_a_user_directory(quickstart: Path) -> None:
    notes = _user_dir(quickstart)
    result = run_cli(
        "minimize", "notify.sftrace", "-e", "quickstart:run_agent", "-o", notes, "--overwrite",
        cwd=quickstart,
    )  # fmt: skip
    assert result.code == 2, result.text
    assert "notes.txt" in result.err
    assert sorted(p.name for p in notes.iterdir()) == ["notes.txt"]


def test_the_plugin_record_mode_never_wipes_a_user_directory(tmp_path: Path) -> None:
    (tmp_path / "test_agent.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from stepfork.trace import trace_tool

            @trace_tool
            def lookup(key: str) -> str:
                return key

            @pytest.mark.stepfork("notes.sftrace")
            def test_recorded(stepfork):
                assert lookup("k") == "k"
            """
        )
    )
    notes = _user_dir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--stepfork-record",
         "test_agent.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "not a Stepfork bundle" in done.stdout + done.stderr
    assert sorted(p.name for p in notes.iterdir()) == ["notes.txt"]
