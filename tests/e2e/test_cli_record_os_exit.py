"""``stepfork record -- python prog.py`` where the program ends with ``os._exit(N)`` (NEWCOMER2 17).

``os._exit`` ends the interpreter at once, before the recording's end: record exited 0 silently and left a
``running`` bundle that failed validation. Now the bundle is finished first (status 0 completed, any other
failed as ``exit status N``, as ``sys.exit(N)`` records it), one line says so, and the exit status is still
the program's (docs/cli.md, "record"). Inside a recorded call, whose result never comes, the bundle is left
``running`` as a killed run's, and the line says that.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from .conftest import run_cli

PROGRAM = textwrap.dedent(
    """
    import os
    import sys

    from stepfork import trace_tool


    @trace_tool
    def step(x: int) -> int:
        if x == int(sys.argv[2]):
            os._exit(3)  # inside the call
        return x


    print(step(1), flush=True)
    os._exit(int(sys.argv[1]))
    """
)


def _manifest(bundle: Path) -> dict[str, object]:
    return json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.mark.parametrize(("status", "state"), [(0, "completed"), (4, "failed")])
def test_the_bundle_is_finished_and_the_exit_status_is_the_programs(
    tmp_path: Path, status: int, state: str
) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    command = ("record", "-o", "run.sftrace", "--", "python", "prog.py", str(status), "-1")
    result = run_cli(*command, cwd=tmp_path)
    assert result.code == status, result.text
    assert result.out == "1\n"
    shown = "completed" if status == 0 else f"failed, exit status {status}"
    assert result.err == (
        f"The program called os._exit({status}); the run was recorded up to there and run.sftrace "
        f"finished ({shown}).\n"
    )
    manifest = _manifest(tmp_path / "run.sftrace")
    assert manifest["status"] == state
    if status:
        assert manifest["failure"]["type"] == f"exit status {status}"  # type: ignore[index]
    validated = run_cli("validate", "--verify-integrity", "run.sftrace", cwd=tmp_path)
    assert validated.code == 0, validated.text


def test_inside_a_recorded_call_the_bundle_is_left_running_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    result = run_cli("record", "-o", "run.sftrace", "--", "python", "prog.py", "0", "1", cwd=tmp_path)
    assert result.code == 3, result.text
    assert result.err == (
        "The program called os._exit(3) inside a recorded call, whose result never came: run.sftrace is "
        "left running, as a killed run's, with every event up to there.\n"
    )
    assert _manifest(tmp_path / "run.sftrace")["status"] == "running"
    assert run_cli("validate", "--partial", "run.sftrace", cwd=tmp_path).code == 0
