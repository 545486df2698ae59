"""``stepfork replay`` of an agent that ends the process with ``os._exit`` mid-run: one line and exit 2 (could
not execute), never the agent's own status (docs/cli.md, "replay").

Before, ``os._exit(0)`` after the agent's calls ended ``stepfork replay`` with exit 0 and no report: "the
run completed" to a CI job that reads the exit code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run_cli

AGENT = """
import contextvars
import os
import threading

import quickstart


def exits_in_the_main_thread():
    quickstart.run_agent()
    os._exit({status})


def exits_in_a_worker_thread():
    context = contextvars.copy_context()  # the replay's context, as the warning for a bare thread asks
    worker = threading.Thread(target=context.run, args=(lambda: (quickstart.run_agent(), os._exit(0)),))
    worker.start()
    worker.join()
    return quickstart.run_agent()


def forks_a_child_that_exits():
    pid = os.fork()
    if pid == 0:  # the child ends with its own status, as multiprocessing's fork start method ends them
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 7:
        raise RuntimeError(f"the child ended with {{status}}, not 7")
    return quickstart.run_agent()
"""


def _line(status: int) -> str:
    return (
        f"The agent called os._exit({status}) during the replay, which ended the process before any "
        "verdict: the replay could not execute (exit 2).\n"
    )


@pytest.mark.parametrize("status", [0, 3])
def test_os_exit_in_the_agent_is_could_not_execute_whatever_its_status(quickstart: Path, status: int) -> None:
    (quickstart / "exiting.py").write_text(AGENT.format(status=status), encoding="utf-8")
    result = run_cli("replay", "notify.sftrace", "-e", "exiting:exits_in_the_main_thread", cwd=quickstart)
    assert result.code == 2, result.text
    assert result.err == _line(status)
    assert result.out == ""  # piped: the report prints at the end, and there is none


def test_os_exit_in_a_worker_thread_of_the_agent_is_could_not_execute(quickstart: Path) -> None:
    (quickstart / "exiting.py").write_text(AGENT.format(status=0), encoding="utf-8")
    result = run_cli("replay", "notify.sftrace", "-e", "exiting:exits_in_a_worker_thread", cwd=quickstart)
    assert result.code == 2, result.text
    assert result.err == _line(0)


def test_a_process_the_agent_forks_ends_with_its_own_status(quickstart: Path) -> None:
    (quickstart / "exiting.py").write_text(AGENT.format(status=0), encoding="utf-8")
    result = run_cli("replay", "notify.sftrace", "-e", "exiting:forks_a_child_that_exits", cwd=quickstart)
    assert result.code == 0, result.text
    assert "Recorded behavior: MATCHED" in result.out
    assert "os._exit" not in result.text
