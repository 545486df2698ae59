"""A process the agent forks that returns out of the agent ends there: it never goes on into the command's
own code, so the command prints one report, its parent's, with its parent's exit code (docs/cli.md,
"Forked children"; NEWCOMER3 finding 11).

Before, with ``--entrypoint``, a child that left the agent (a refused ``os.execv`` with no ``os._exit``
after it) finished the replay in its own process and printed a second full report on stdout, "Recorded
behavior: MATCHED / Status: COMPLETED", before its parent's DIVERGED one: a script grepping for MATCHED
was fooled, and ``--json`` printed two documents.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import run_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")

AGENT = """
import os
import socket

import quickstart


def _child(refused):
    if refused:
        try:  # the seal refuses it in the child too; the agent swallows the error (NEWCOMER3 case 003)
            socket.create_connection(("127.0.0.1", 9), timeout=5).close()
        except Exception:
            pass
    return {"child": True}  # no os._exit: the child returns out of the agent


def _forking(refused):
    pid = os.fork()
    if pid == 0:
        return _child(refused)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the child ended with {status}")
    return quickstart.run_agent()


def forks_a_child_that_returns():
    return _forking(False)


def forks_a_child_the_seal_refuses():
    return _forking(True)
"""


@pytest.fixture
def agent(quickstart: Path) -> Path:
    (quickstart / "forking.py").write_text(AGENT, encoding="utf-8")
    return quickstart


def test_a_child_that_returns_out_of_the_agent_prints_no_report(agent: Path) -> None:
    result = run_cli("replay", "notify.sftrace", "-e", "forking:forks_a_child_that_returns", cwd=agent)
    assert result.code == 0, result.text
    assert result.out.count("Stepfork Replay") == 1, result.out
    assert result.out.count("Recorded behavior: MATCHED") == 1


def test_a_refused_child_that_returns_leaves_one_report_and_it_says_diverged(agent: Path) -> None:
    result = run_cli("replay", "notify.sftrace", "-e", "forking:forks_a_child_the_seal_refuses", cwd=agent)
    assert result.code == 1, result.text
    assert result.out.count("Stepfork Replay") == 1, result.out
    assert "MATCHED" not in result.out
    assert "DIVERGED" in result.out


def test_with_json_stdout_holds_the_one_report_of_the_parent(agent: Path) -> None:
    given = ("-e", "forking:forks_a_child_the_seal_refuses", "--json")
    result = run_cli("replay", "notify.sftrace", *given, cwd=agent)
    assert result.code == 1, result.text
    report = json.loads(result.out)  # one document, not two
    assert report["exit_code"] == 1


def test_a_forked_run_whose_agent_forks_prints_one_fork_report(agent: Path) -> None:
    given = ("--step", "2", "-e", "forking:forks_a_child_that_returns", "-o", "out.sftrace")
    result = run_cli("fork", "notify.sftrace", *given, cwd=agent)
    assert result.code == 0, result.text
    assert result.out.count("Stepfork Fork") == 1, result.out
