"""An agent that catches its own exception around a tool that failed while recording (C8), and its two
recordings, shared by the ``--raise-as`` end-to-end tests (export, run, score, replay).

``rl.sftrace``: ``run`` caught ``RateLimited`` and completed with ``{"status": "degraded", "why": "slow"}``.
``escalate.sftrace``: ``run_escalating`` turned it into its own ``AgentFailed``: a failed run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import cli_env

AGENT = """
from stepfork.trace import trace_tool


class RateLimited(Exception):
    def __init__(self, message, retry_after):
        super().__init__(message)
        self.retry_after = retry_after


class AgentFailed(Exception):
    pass


class NotAnError:
    pass


class Sealed(Exception):
    def __init_subclass__(cls, **kwargs):
        raise TypeError("Sealed takes no subclasses")


class Cancelled(BaseException):
    pass


def interrupt_factory(error):
    return KeyboardInterrupt(error.message)


@trace_tool
def quote(symbol: str) -> dict:
    try:
        raise TimeoutError("upstream timed out")
    except TimeoutError as exc:
        raise RateLimited("slow", retry_after=3) from exc


def run():
    try:
        return quote("ACME")
    except RateLimited as exc:
        return {"status": "degraded", "why": str(exc)}


def run_escalating():
    try:
        return quote("ACME")
    except RateLimited as exc:
        raise AgentFailed("gave up after a rate limit") from exc


def run_uncaught():
    return quote("ACME")
"""

RECORD = """
from stepfork.trace import record
import rl_agent

with record("rl", output="rl.sftrace") as session:
    session.set_output(rl_agent.run())
try:
    with record("rl", output="escalate.sftrace") as session:
        session.set_output(rl_agent.run_escalating())
except rl_agent.AgentFailed:
    pass
"""

EXPECTED = {"status": "degraded", "why": "slow"}


def record_agent(directory: Path) -> Path:
    """Write ``rl_agent.py`` in ``directory`` and record both bundles there (a real recording)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "rl_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RECORD)], cwd=directory, env=cli_env(), check=True, timeout=120
    )
    return directory


def copy_recorded(source: Path, target: Path) -> Path:
    """A fresh working copy of what :func:`record_agent` wrote (each test edits its own files)."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "rl_agent.py", target / "rl_agent.py")
    for bundle in ("rl.sftrace", "escalate.sftrace"):
        shutil.copytree(source / bundle, target / bundle)
    return target
