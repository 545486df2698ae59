"""An exported test of an agent that catches its own exception around a tool that failed while recording
(C8): it fails as exported, because the agent's ``except`` does not catch a RecordedDependencyError. It
passes after the edit docs/replay.md documents (a literal ``RAISE_AS`` constant passed to
``run_regression_case``). ``stepfork run`` and ``stepfork score`` drive it as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import cli_env, run_cli

AGENT = """
from stepfork.trace import trace_tool


class RateLimited(Exception):
    def __init__(self, message, retry_after):
        super().__init__(message)
        self.retry_after = retry_after


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
"""

RECORD = """
from stepfork.trace import record
import rl_agent

with record("rl", output="rl.sftrace") as session:
    session.set_output(rl_agent.run())
"""


def test_an_exported_test_passes_once_raise_as_names_the_agents_exception(tmp_path: Path) -> None:
    (tmp_path / "rl_agent.py").write_text(textwrap.dedent(AGENT))
    subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RECORD)], cwd=tmp_path, env=cli_env(), check=True, timeout=120
    )
    (tmp_path / "expected.json").write_text(json.dumps({"status": "degraded", "why": "slow"}))
    exported = run_cli(
        "export",
        "rl.sftrace",
        "--pytest",
        "--entrypoint",
        "rl_agent:run",
        "--expect-output",
        "expected.json",
        "--output",
        "test_rl.py",
        cwd=tmp_path,
    )
    assert exported.code == 0, exported.text
    score_before = run_cli("score", "test_rl.py", cwd=tmp_path)

    as_exported = run_cli("run", "test_rl.py", cwd=tmp_path)
    assert as_exported.code == 1, as_exported.text
    assert "recorded tool failure for 'quote': rl_agent.RateLimited: slow" in as_exported.text

    test = tmp_path / "test_rl.py"
    source = test.read_text()
    source = source.replace(
        "\n\ndef test_", "\nRAISE_AS = {'rl_agent.RateLimited': 'rl_agent:RateLimited'}\n\n\ndef test_", 1
    )
    source = source.replace("        mode=MODE,\n", "        mode=MODE,\n        raise_as=RAISE_AS,\n", 1)
    assert "raise_as=RAISE_AS" in source
    test.write_text(source)

    edited = run_cli("run", "test_rl.py", cwd=tmp_path)
    assert edited.code == 0, edited.text
    assert "Verdict: PASSED" in edited.out
    score_after = run_cli("score", "test_rl.py", cwd=tmp_path)
    assert (score_after.code, score_after.out) == (score_before.code, score_before.out)
