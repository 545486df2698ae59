"""The real ``stepfork`` console script run as a subprocess, as the integration stories run it: in a
folder, with the test's environment plus ``NO_COLOR`` and the variables given (a server's URL), output
captured as text, a 300 s guard against a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STEPFORK = Path(sys.executable).parent / "stepfork"


def run_stepfork(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``stepfork ARGS`` in ``cwd`` with ``env`` added to the environment; never raises on its exit code."""
    environment = {**os.environ, "NO_COLOR": "1", **env}
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )
