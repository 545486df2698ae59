""".ci/run proves the repository is self-contained (issue 13): it runs exactly the README's test command,
``hatch test``, once, from a copy of the tree that has no ``shared`` folder beside it, and an empty
collection (pytest exit 5) fails CI.

The script runs for real, with a stand-in ``python`` and ``hatch`` on its path (no download, no suite):
each records where and how it was called.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FAKE_PYTHON = """#!/usr/bin/env bash
# `python -m venv DIR` makes DIR/bin/python (this script) and DIR/bin/hatch; everything else succeeds.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin"
    cp "$0" "$3/bin/python"
    cp "$FAKE_HATCH" "$3/bin/hatch"
    chmod +x "$3/bin/python" "$3/bin/hatch"
fi
exit 0
"""

FAKE_HATCH = """#!/usr/bin/env bash
beside=alone
parent=$(dirname "$PWD")
[ -e "$parent/shared" ] && beside=shared
has_tests=no
data="$PWD/tests/interop/data/reference-bundles/PROVENANCE.md"
[ -f "$PWD/tests/conftest.py" ] && [ -f "$data" ] && has_tests=yes
printf '%s|%s|%s|%s\\n' "$PWD" "$*" "$beside" "$has_tests" >> "$FAKE_LOG"
if [ "$1" = "test" ]; then exit "${FAKE_TEST_EXIT:-0}"; fi
exit 0
"""


def _executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def run_ci(tmp_path: Path, test_exit: int) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    if shutil.which("bash") is None or shutil.which("tar") is None:  # pragma: no cover - CI has both
        pytest.skip("bash and tar are needed to run .ci/run")
    log = tmp_path / "calls.log"
    env = {
        **os.environ,
        "PYTHON": str(_executable(tmp_path / "python", FAKE_PYTHON)),
        "FAKE_HATCH": str(_executable(tmp_path / "hatch", FAKE_HATCH)),
        "FAKE_LOG": str(log),
        "FAKE_TEST_EXIT": str(test_exit),
        "STEPFORK_CI_TOOLS": str(tmp_path / "tools"),
    }
    done = subprocess.run(
        ["bash", str(REPO / ".ci" / "run")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    calls = [line.split("|") for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    return done, calls


def test_ci_runs_hatch_test_once_from_a_copy_with_nothing_beside_it(tmp_path: Path) -> None:
    done, calls = run_ci(tmp_path, 0)
    assert done.returncode == 0, done.stdout + done.stderr
    tests = [call for call in calls if call[1].split()[:1] == ["test"]]
    assert len(tests) == 1, calls
    where, args, beside, has_tests = tests[0]
    assert args == "test"  # exactly the README's command, no arguments
    assert (beside, has_tests) == ("alone", "yes")
    assert Path(where).resolve() != REPO
    assert not Path(where).exists()  # the copy is removed afterwards
    # lint and types still run, in the checkout
    assert [call[1] for call in calls if call[1] != "test"][-2:] == ["run lint:check", "run types:check"]
    # the newest SDK releases are tested too, beside the lock (issue 28)
    assert "run latest:test" in [call[1] for call in calls]


def test_an_empty_collection_fails_ci(tmp_path: Path) -> None:
    done, calls = run_ci(tmp_path, 5)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "collected no tests" in done.stderr
    assert not any(call[1].startswith("run ") for call in calls)  # stopped before lint


def test_a_failing_suite_fails_ci_with_its_exit_code(tmp_path: Path) -> None:
    done, _ = run_ci(tmp_path, 1)
    assert done.returncode == 1, done.stdout + done.stderr
