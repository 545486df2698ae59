"""``stepfork replay``/``run`` of an agent module that records a run when it is imported (NEWCOMER2 10).

README's Record snippet once had its ``with record(..., overwrite=True)`` at module level. Importing that
module under ``stepfork replay --entrypoint rec:run_agent`` ran the tool and the model live, recorded over
the bundle being replayed, and the replay still printed MATCHED. Such a recording is refused: the replay
cannot resolve the entrypoint (exit 2, the spec's two lines), nothing runs live and the bundle is unchanged;
its exported test could not execute (``entrypoint_unresolvable``), it caught no regression.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import cli_env, run_cli

AGENT = textwrap.dedent(
    """
    from pathlib import Path

    from stepfork import llm_request, record, trace_tool


    @trace_tool
    def order_status(order_id: str) -> dict:
        with Path("side_effects.log").open("a") as log:
            log.write("order_status ran\\n")
        return {"order_id": order_id, "status": "shipped"}


    def ask_model(status: dict) -> dict:
        with Path("side_effects.log").open("a") as log:
            log.write("model ran\\n")
        return {"action": "notify", "reason": f"order {status['status']}"}


    def run_agent() -> dict:
        status = order_status("ORD-1001")
        return llm_request(model="local-model", input={"status": status}, call=lambda: ask_model(status))


    with record("notify-agent", output="failure.sftrace", overwrite=True) as session:
        session.set_output(run_agent())
    """
)


def _digest(bundle: Path) -> str:
    return hashlib.sha256(
        b"".join((bundle / name).read_bytes() for name in sorted(p.name for p in bundle.iterdir()))
    ).hexdigest()


def _recorded(tmp_path: Path) -> Path:
    (tmp_path / "rec.py").write_text(AGENT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "rec.py"], cwd=tmp_path, env=cli_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "side_effects.log").unlink()
    return tmp_path / "failure.sftrace"


def test_replay_refuses_an_entrypoint_module_that_records_when_imported(tmp_path: Path) -> None:
    bundle = _recorded(tmp_path)
    before = _digest(bundle)
    result = run_cli("replay", "failure.sftrace", "--entrypoint", "rec:run_agent", cwd=tmp_path)
    assert result.code == 2, result.text
    assert "MATCHED" not in result.text
    lines = result.err.strip().splitlines()
    assert lines[0] == "Unable to resolve entrypoint."
    assert "record('notify-agent') refused: a replay is running in this process" in lines[1]
    assert "if __name__" in lines[1]
    assert len(lines) == 2
    assert not (tmp_path / "side_effects.log").exists()  # neither the tool nor the model ran live
    assert _digest(bundle) == before  # the bundle being replayed was not recorded again


def test_its_exported_test_could_not_execute(tmp_path: Path) -> None:
    bundle = _recorded(tmp_path)
    before = _digest(bundle)
    exported = run_cli("export", "failure.sftrace", "-e", "rec:run_agent", "-o", "test_rec.py", cwd=tmp_path)
    assert exported.code == 0, exported.text
    result = run_cli("run", "test_rec.py", "--json", cwd=tmp_path)
    assert result.code == 2, result.text
    assert '"verdict": "could_not_execute"' in result.out
    assert '"reason": "entrypoint_unresolvable"' in result.out
    assert not (tmp_path / "side_effects.log").exists()
    assert _digest(bundle) == before
