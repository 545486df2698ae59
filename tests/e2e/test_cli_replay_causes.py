"""``stepfork replay --raise-as``: the recorded cause chain is ``__cause__`` again (NEWCOMER2 16, CASES C8).

An agent that catches its own ``RateLimited`` and reads ``type(e.__cause__).__name__`` replayed DIVERGED
(``err.cause: expected "TimeoutError", got null``) for unchanged code: the chain was only on ``.chain``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import cli_env, run_cli

AGENT = textwrap.dedent(
    """
    import sys

    from stepfork import record, trace_tool


    class RateLimited(Exception):
        def __init__(self, msg, retry_after):
            super().__init__(msg)
            self.retry_after = retry_after


    @trace_tool
    def flaky(x: str) -> dict:
        try:
            raise TimeoutError("upstream timed out")
        except TimeoutError as e:
            raise RateLimited("slow", retry_after=3) from e


    def run_agent():
        try:
            flaky("x")
        except Exception as e:
            cause = type(e.__cause__).__name__ if e.__cause__ else None
            return {"type": type(e).__name__, "msg": str(e), "cause": cause}
        return None


    if __name__ == "__main__":
        with record("cases", output=sys.argv[1], overwrite=True) as s:
            s.set_output(run_agent())
    """
)


def test_the_agents_except_path_reads_the_recorded_cause_and_the_replay_matches(tmp_path: Path) -> None:
    (tmp_path / "agent_c.py").write_text(AGENT, encoding="utf-8")
    command = [sys.executable, "agent_c.py", "c.sftrace"]
    done = subprocess.run(command, cwd=tmp_path, env=cli_env(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    result = run_cli(
        "replay",
        "c.sftrace",
        "-e",
        "agent_c:run_agent",
        "--raise-as",
        "RateLimited=agent_c:RateLimited",
        cwd=tmp_path,
    )
    assert result.code == 0, result.text
    assert "Recorded behavior: MATCHED" in result.out
    assert '"cause":"TimeoutError"' in result.out
