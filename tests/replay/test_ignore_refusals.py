"""A bad ``--ignore`` is refused with one line and exit 2, never accepted silently (NEWCOMER2 finding 13;
docs/cli.md, "--ordering and --ignore").

- a malformed path (``order_status:$.[``, ``$.[``, ``$.items[x]``) could only match itself: a typo that
  would ignore nothing, as ``diff --ignore`` already refuses;
- a ``TOOL:PATH`` whose TOOL names no recorded call (``run:$.remind_at``) would ignore nothing too: the
  line names the calls the recording holds and, for ``run``, how a path of the run's output is given.

Through the real CLI (``replay`` and ``export``, both forms of ``replay``) and the Python API
(``ReplaySession``, ``replay_entrypoint``, ``run_regression_case``), which raise ValueError.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stepfork.replay import ReplaySession, replay_entrypoint, run_regression_case
from stepfork.trace import record, trace_tool

STEPFORK = Path(sys.executable).parent / "stepfork"
AGENT = """import datetime
from stepfork import record, trace_tool


@trace_tool
def order_status(order_id: str) -> dict:
    return {"order_id": order_id, "status": "shipped"}


def run_agent():
    found = order_status("ORD-1001")
    # a time outside the run (a reminder tomorrow): behaviour, unlike a clock reading inside the run
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    return {"status": found["status"], "remind_at": later.isoformat()}


if __name__ == "__main__":
    import sys

    with record("orders", output=sys.argv[1], overwrite=True) as s:
        s.set_output(run_agent())
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ignore")
    (folder / "orders.py").write_text(AGENT)
    done = subprocess.run(
        [sys.executable, "orders.py", "run.sftrace"], cwd=folder, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return folder


def stepfork(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(STEPFORK), *args], cwd=cwd, capture_output=True, text=True, check=False)


REPLAY = ("replay", "run.sftrace", "--entrypoint", "orders:run_agent")
SCRIPT = ("replay", "run.sftrace", "--", "python", "orders.py", "unused.sftrace")
EXPORT = ("export", "run.sftrace", "--pytest", "--entrypoint", "orders:run_agent", "-o", "test_orders.py")


@pytest.mark.parametrize("command", [REPLAY, EXPORT], ids=["replay", "export"])
@pytest.mark.parametrize("value", ["order_status:$.[", "$.[", "order_status:$.items[x]", "$.a]"])
def test_a_malformed_path_is_refused_with_one_line(
    recorded: Path, command: tuple[str, ...], value: str
) -> None:
    done = stepfork(recorded, *command, "--ignore", value)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert value in lines[0], lines[0]
    assert "'['" in lines[0], lines[0]
    assert not (recorded / "test_orders.py").exists()


@pytest.mark.parametrize("command", [REPLAY, SCRIPT, EXPORT], ids=["replay", "replay-script", "export"])
def test_a_tool_the_recording_does_not_hold_is_refused_with_the_calls_it_holds(
    recorded: Path, command: tuple[str, ...]
) -> None:
    cut = command.index("--") if "--" in command else len(command)  # options come before the program
    done = stepfork(recorded, *command[:cut], "--ignore", "order_stats:$.order_id", *command[cut:])
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip()
    assert "'order_stats'" in line, line
    assert "order_status" in line, line
    assert "\n" not in line
    assert not (recorded / "test_orders.py").exists()


def test_run_is_no_call_and_the_line_says_how_a_path_of_the_output_is_given(recorded: Path) -> None:
    done = stepfork(recorded, *REPLAY, "--ignore", "run:$.remind_at")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--ignore '$.remind_at'" in done.stderr, done.stderr
    given = stepfork(recorded, *REPLAY, "--ignore", "$.remind_at", "--ignore", "order_status:$.order_id")
    assert given.returncode == 0, given.stdout + given.stderr
    assert "remind_at (--ignore)" in given.stdout


@trace_tool
def lookup(query: str) -> dict[str, str]:
    return {"query": query}


def agent() -> dict[str, str]:
    return lookup("a")


def test_the_python_api_refuses_them_with_a_value_error(tmp_path: Path) -> None:
    bundle = tmp_path / "run.sftrace"
    with record("api", output=bundle) as session:
        session.set_output(agent())
    with pytest.raises(ValueError, match=r"'lokup'.*its calls are lookup"):
        ReplaySession.from_trace(bundle, ignore={"lokup": ["$.query"]})
    with pytest.raises(ValueError, match=r"invalid path '\$\.\['"):
        ReplaySession.from_trace(bundle, ignore={"lookup": ["$.["]})
    with pytest.raises(ValueError, match=r"invalid ignore path '\$\.items\[x\]'"):
        replay_entrypoint(bundle, agent, ignore_output=["$.items[x]"])
    with pytest.raises(ValueError, match="starting with"):
        run_regression_case(agent, bundle, ignore_output=["remind_at"])
    assert replay_entrypoint(bundle, agent, ignore={"lookup": ["$.items[*].id"]}).exit_code == 0
