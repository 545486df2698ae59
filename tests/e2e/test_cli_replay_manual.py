"""``stepfork replay --mode manual`` on a terminal: each dependency call is put to the user (spec "replay").

Standard input is a pseudo-terminal here; the answers are typed into it before the command starts.
"""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest

from .conftest import ENTRYPOINTS, cli_env, stepfork_executable

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs a POSIX pseudo-terminal")


def _replay_on_a_terminal(bundle: Path, answers: str) -> subprocess.CompletedProcess[str]:
    master, slave = pty.openpty()
    try:
        os.write(master, answers.encode())
        return subprocess.run(
            [
                stepfork_executable(),
                "replay",
                str(bundle),
                "--entrypoint",
                "golden_agents:weather_agent",
                "--mode",
                "manual",
            ],
            cwd=ENTRYPOINTS,
            stdin=slave,
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=120,
            check=False,
        )
    finally:
        os.close(slave)
        os.close(master)


def test_approving_every_call_replays_the_run(golden_copy) -> None:
    done = _replay_on_a_terminal(golden_copy("successful_run"), "y\ny\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Approve llm gpt-test with input" in done.stderr
    assert "Approve tool weather_lookup with input" in done.stderr
    assert "Recorded behavior: MATCHED" in done.stdout


def test_refusing_a_call_stops_the_replay_as_a_divergence(golden_copy) -> None:
    done = _replay_on_a_terminal(golden_copy("successful_run"), "n\n")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Dependency matching: DIVERGED" in done.stdout
    assert "weather_lookup" not in done.stderr
