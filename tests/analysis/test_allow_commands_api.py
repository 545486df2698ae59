"""``allow_commands=`` on the Python API of ``minimize_trace``, ``fork`` and ``check_corpus``, named as
``ReplaySession``'s: the programs a sealed replay lets start unsealed (docs/replay.md, "The seal's rules").

The agent runs ``git --version`` unrecorded before its tool call, then fails: without the option each API
meets ``child_process_refused`` (minimize: no failure to minimize; fork: a failed run; check: DIVERGED),
with it each reaches the agent's own failure and records what was opened. A malformed entry is refused
before anything runs. The CLI side: tests/e2e/test_cli_allow_command.py.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from stepfork.analysis import ForkError, MinimizeError, check_corpus, fork, minimize_trace
from stepfork.trace import Trace, record

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX programs"),
    pytest.mark.skipif(shutil.which("git") is None, reason="the agent runs git"),
]

AGENT = """
import subprocess

from stepfork.trace import trace_tool


@trace_tool
def lookup(city: str) -> str:
    return f"{city}: sunny"


def run_agent():
    version = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True).stdout
    forecast = lookup("Paris")
    lookup("Lyon")
    raise ValueError(f"cannot plan with {version.split()[0]} and {forecast}")
"""


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "git_agent.py").write_text(textwrap.dedent(AGENT))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import git_agent  # type: ignore[import-not-found]

    (tmp_path / "corpus").mkdir()
    bundle = tmp_path / "corpus" / "g.sftrace"
    with pytest.raises(ValueError, match="cannot plan"), record("git", output=bundle):
        git_agent.run_agent()
    return bundle


def test_minimize_trace_takes_allow_commands(recorded: Path, tmp_path: Path) -> None:
    def minimize(out: str, **options: object) -> object:
        return minimize_trace(
            recorded, "git_agent:run_agent", output=tmp_path / out, import_root=tmp_path, workers=1, **options
        )

    with pytest.raises(MinimizeError, match=r"replay error \(child_process_refused\)") as refused:
        minimize("refused.sftrace")
    assert refused.value.code == "no_failure"
    assert "--allow-command git" in str(refused.value)
    with pytest.raises(MinimizeError, match="invalid allowed command") as malformed:
        minimize("malformed.sftrace", allow_commands=[""])
    assert malformed.value.code == "invalid_option"

    done = minimize("done.sftrace", allow_commands=["git", "git"])
    assert (done.signature.kind, done.signature.detail) == ("exception", "ValueError")
    assert done.allow_commands == ("git",)
    assert done.to_dict()["network"] == {"policy": "sealed", "allowed_hosts": [], "allowed_commands": ["git"]}


def test_fork_takes_allow_commands(recorded: Path, tmp_path: Path) -> None:
    import git_agent

    second = [e.step for e in Trace.load(recorded).events if e.type == "tool_call"][1]

    def forked(out: str, **options: object) -> object:
        return fork(
            recorded,
            step=second,
            entrypoint=git_agent.run_agent,
            output=tmp_path / out,
            allow_live_tools=["lookup"],
            **options,
        )

    refused = forked("refused.sftrace")
    assert refused.status == "failed"
    assert str(refused.error).startswith("ChildProcessRefusedError: child process refused during frozen")
    with pytest.raises(ForkError, match="invalid allowed command") as malformed:
        forked("malformed.sftrace", allow_commands=[" "])
    assert malformed.value.code == "invalid_option"

    done = forked("done.sftrace", allow_commands=["git"])
    assert (done.status, done.frozen_calls, done.live_calls) == ("failed", 1, 1)
    assert str(done.error).startswith("ValueError: cannot plan with git and Paris: sunny")
    assert done.to_dict()["network"]["allowed_commands"] == ["git"]
    assert ("Network", "sealed (allowed commands: git)") in done.rows()


def test_check_corpus_takes_allow_commands(recorded: Path, tmp_path: Path) -> None:
    refused = check_corpus(tmp_path / "corpus", "git_agent:run_agent", jobs=1, import_root=tmp_path)
    (verdict,) = refused.verdicts
    assert (verdict.verdict, verdict.code) == ("DIVERGED", "child_process_refused")
    with pytest.raises(ValueError, match="invalid allowed command"):
        check_corpus(tmp_path / "corpus", "git_agent:run_agent", jobs=1, allow_commands=[""])

    done = check_corpus(
        tmp_path / "corpus", "git_agent:run_agent", jobs=1, import_root=tmp_path, allow_commands=["git"]
    )
    assert [v.verdict for v in done.verdicts] == ["REPRODUCED FAILURE"]
    assert done.to_dict()["network"] == {"policy": "sealed", "allowed_commands": ["git"]}
    (receipt,) = done.receipts().values()
    assert receipt["allow_commands"] == ["git"]
    assert "allow_commands" not in next(iter(refused.receipts().values()))
