"""``python quickstart.py record BUNDLE`` writes like every other writer: an existing bundle is replaced only
with ``--overwrite`` (GUIDE.md, "nothing overwritten without --overwrite")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import cli_env


def _record(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "quickstart.py", "record", *args],
        cwd=work,
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
        check=False,
    )


def test_recording_over_an_existing_bundle_is_refused_without_overwrite(quickstart: Path) -> None:
    events = quickstart / "notify.sftrace" / "events.jsonl"
    before = events.read_bytes()
    refused = _record(quickstart, "notify.sftrace")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr == "notify.sftrace exists; pass --overwrite to replace it\n"
    assert refused.stdout == ""  # the agent did not run
    assert events.read_bytes() == before
    replaced = _record(quickstart, "notify.sftrace", "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert "'should_notify': False" in replaced.stdout
