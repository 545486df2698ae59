"""An agent that ends the process with ``os._exit`` mid-run: ``stepfork replay`` says so in one line and
exits 2 (could not execute), ``stepfork fork`` exits 1 and names the unfinished bundle; never the agent's
own status (docs/cli.md, "replay"; docs/fork.md).

Before, ``os._exit(0)`` after the agent's calls ended ``stepfork replay`` with exit 0 and no report, "the run
completed" to a CI job that reads the exit code, and ``stepfork fork`` with exit 0 and a bundle that never
finished.
"""

from __future__ import annotations

import json
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


# a program replayed with `stepfork replay BUNDLE -- python agent.py`: one recorded model call, then, when
# asked, os._exit(0) where the recorded run went on to its end
PROGRAM = """
import os
import httpx2


def answer(request):
    return httpx2.Response(200, json={"id": "chatcmpl-1", "object": "chat.completion", "choices": []})


client = httpx2.Client(transport=httpx2.MockTransport(answer))
client.post("https://api.openai.com/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": []})
if os.environ.get("EXIT_MIDWAY"):
    os._exit(0)
"""


def test_os_exit_in_a_replayed_program_is_could_not_execute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent.py").write_text(PROGRAM, encoding="utf-8")
    recorded = run_cli("record", "-o", "run.sftrace", "--", "python", "agent.py", cwd=tmp_path)
    assert recorded.code == 0, recorded.text
    assert run_cli("replay", "run.sftrace", "--", "python", "agent.py", cwd=tmp_path).code == 0
    monkeypatch.setenv("EXIT_MIDWAY", "1")
    result = run_cli("replay", "run.sftrace", "--", "python", "agent.py", cwd=tmp_path)
    assert result.code == 2, result.text
    assert result.err.endswith(_line(0))


def _fork_line(status: int) -> str:
    return (
        f"The agent called os._exit({status}) during the forked run, which ended the process: out.sftrace "
        "holds the run up to that call, unfinished (stepfork validate --partial reads it).\n"
    )


def test_os_exit_in_a_forked_run_is_exit_1_and_names_the_unfinished_bundle(quickstart: Path) -> None:
    (quickstart / "exiting.py").write_text(AGENT.format(status=0), encoding="utf-8")
    given = ("--step", "2", "-e", "exiting:exits_in_the_main_thread", "-o", "out.sftrace")
    result = run_cli("fork", "notify.sftrace", *given, cwd=quickstart)
    assert result.code == 1, result.text
    assert result.out.endswith(_fork_line(0))  # fork's result (the run did not finish): stdout
    assert "Status:" not in result.out  # no report of a run that never ended
    unfinished = run_cli("validate", "out.sftrace", cwd=quickstart)
    assert unfinished.code == 1, unfinished.text
    assert "run_incomplete" in unfinished.text
    assert run_cli("validate", "--partial", "out.sftrace", cwd=quickstart).code == 0


def test_with_json_a_forked_run_ended_by_os_exit_is_the_error_object_on_stdout(quickstart: Path) -> None:
    (quickstart / "exiting.py").write_text(AGENT.format(status=3), encoding="utf-8")
    given = ("--step", "2", "-e", "exiting:exits_in_the_main_thread", "-o", "out.sftrace", "--json")
    result = run_cli("fork", "notify.sftrace", *given, cwd=quickstart)
    assert result.code == 1, result.text
    message = _fork_line(3).rstrip("\n")
    assert json.loads(result.out) == {"error": "agent_exited", "message": message, "exit_code": 1}
    assert result.err.endswith(message + "\n")
