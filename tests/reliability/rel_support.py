"""Shared helpers of the reliability campaign (issue 7): scale, figures, bounded subprocesses, the CLI driver.

``STEPFORK_SOAK=1`` switches every campaign from its CI size (minutes in total on 2 cores) to its soak size
(``hatch run soak:run``). ``STEPFORK_FIGURES=<file>`` makes each campaign append its counts to that JSON
Lines file; docs/reliability.md quotes the last soak run's figures.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GOLDEN = REPO / "tests" / "interop" / "data" / "reference-bundles" / "tests" / "golden"
DRIVER = HERE / "cli_driver.py"

SOAK = os.environ.get("STEPFORK_SOAK") == "1"

# Exit codes the spec documents for every command (spec/cli-reference.txt); 3 only for validate.
DOCUMENTED_EXIT = {"validate": {0, 1, 2, 3}}
DEFAULT_EXIT = {0, 1, 2}


def scale(ci: int, soak: int) -> int:
    """``soak`` under STEPFORK_SOAK=1, else ``ci``."""
    return soak if SOAK else ci


def record_figure(campaign: str, **figures: Any) -> None:
    """Append ``{"campaign", "soak", **figures}`` to $STEPFORK_FIGURES (no-op when unset)."""
    target = os.environ.get("STEPFORK_FIGURES")
    if not target:
        return
    line = json.dumps({"campaign": campaign, "soak": SOAK, **figures}, sort_keys=True)
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def limit_memory(megabytes: int) -> Any:
    """A ``preexec_fn`` capping the child's address space at ``megabytes`` (bounded memory is enforced)."""

    def apply() -> None:
        cap = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return apply


def child_env() -> dict[str, str]:
    """The environment of campaign subprocesses: no debug tracebacks, fixed width, no colour."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "120", "NO_COLOR": "1"}
    env.pop("STEPFORK_DEBUG", None)
    return env


@dataclass
class CliOutcome:
    """One CLI invocation run by the driver: argv, exit code, output, seconds, and the crash marker."""

    argv: list[str]
    code: int
    out: str
    err: str
    seconds: float
    crashed: str | None  # an exception that escaped main() (the driver caught it), else None

    @property
    def text(self) -> str:
        return self.out + self.err


def run_cli_batch(
    jobs: Sequence[Sequence[str]],
    *,
    cwd: Path,
    per_job_seconds: int = 60,
    memory_mb: int = 2048,
) -> tuple[list[CliOutcome], int]:
    """Run each argv of ``jobs`` through ``stepfork.cli.app.main`` in ONE bounded subprocess.

    The child imports the CLI once (a subprocess per job would cost ~0.5 s each), runs every job in-process
    with stdout/stderr captured and a per-job SIGALRM bound, under an address-space cap of ``memory_mb``.
    Returns the outcomes and the child's peak RSS in KiB. Raises AssertionError when the child itself dies
    (memory cap, hang past the total bound).
    """
    spec = cwd / f".jobs-{time.monotonic_ns()}.json"
    spec.write_text(json.dumps({"jobs": [list(j) for j in jobs], "seconds": per_job_seconds}))
    try:
        done = subprocess.run(
            [sys.executable, str(DRIVER), str(spec)],
            cwd=cwd,
            capture_output=True,
            env=child_env(),
            timeout=per_job_seconds * len(jobs) + 60,
            preexec_fn=limit_memory(memory_mb),
            check=False,
        )
    finally:
        spec.unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-3000:]
    report = json.loads(done.stdout)
    outcomes = [CliOutcome(**row) for row in report["outcomes"]]
    return outcomes, int(report["max_rss_kib"])


def one_clear_failure(outcome: CliOutcome) -> str | None:
    """Why ``outcome`` breaks the campaign's output rule, or None when it is fine.

    The rule (issue 7): a documented exit code; no traceback; no escaped exception; no "internal error"
    (the CLI's catch-all for bugs); a failure says something on stderr or stdout.
    """
    command = outcome.argv[0]
    if outcome.crashed:
        return f"exception escaped main(): {outcome.crashed}"
    if outcome.code not in DOCUMENTED_EXIT.get(command, DEFAULT_EXIT):
        return f"undocumented exit code {outcome.code}"
    if "Traceback (most recent call last)" in outcome.text:
        return "a traceback was printed"
    if "internal error" in outcome.err:
        return f"internal error: {outcome.err.strip()[:300]}"
    if outcome.code != 0 and not outcome.text.strip():
        return "a failure printed nothing"
    return None
