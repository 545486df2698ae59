"""``stepfork replay --mode manual`` on a terminal: each dependency call is put to the user (spec "replay").

Standard input is a pseudo-terminal here; the answers are typed into it before the command starts.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from .conftest import ENTRYPOINTS, cli_env, stepfork_executable

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs a POSIX pseudo-terminal")


def _replay_on_a_terminal(
    bundle: Path, answers: str, entrypoint: str = "golden_agents:weather_agent", cwd: Path = ENTRYPOINTS
) -> subprocess.CompletedProcess[str]:
    master, slave = pty.openpty()
    try:
        os.write(master, answers.encode())
        return subprocess.run(
            [stepfork_executable(), "replay", str(bundle), "--entrypoint", entrypoint, "--mode", "manual"],
            cwd=cwd,
            stdin=slave,
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=120,
            check=False,
        )
    finally:
        os.close(slave)
        os.close(master)


def test_approving_every_call_replays_the_run(golden_copy) -> None:
    done = _replay_on_a_terminal(golden_copy("successful_run"), "y\ny\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Approve llm gpt-test with input" in done.stderr
    assert "Approve tool weather_lookup with input" in done.stderr
    assert "Recorded behavior: MATCHED" in done.stdout


def test_refusing_a_call_stops_the_replay_as_a_divergence(golden_copy) -> None:
    done = _replay_on_a_terminal(golden_copy("successful_run"), "n\n")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Dependency matching: DIVERGED" in done.stdout
    assert "weather_lookup" not in done.stderr


def _read_until(fd: int, marker: bytes) -> bytes:
    """Read the terminal's output until ``marker`` appears (a 60 s guard, not a timing assumption)."""
    seen = b""
    while marker not in seen:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, f"no {marker!r} on the terminal; got {seen!r}"
        seen += os.read(fd, 4096)
    return seen


def _drain(fd: int) -> bytes:
    seen = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        seen += data
    return seen


def _controlling_terminal() -> None:
    # a session of its own with the pseudo-terminal as controlling terminal, so ^C typed there is SIGINT
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_ctrl_c_at_the_approval_prompt_prints_interrupted_and_exits_130(golden_copy) -> None:
    master, slave = pty.openpty()
    try:
        child = subprocess.Popen(
            [
                stepfork_executable(),
                "replay",
                str(golden_copy("successful_run")),
                "--entrypoint",
                "golden_agents:weather_agent",
                "--mode",
                "manual",
            ],
            cwd=ENTRYPOINTS,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            env=cli_env(),
            preexec_fn=_controlling_terminal,
        )
        os.close(slave)
        slave = -1
        terminal = _read_until(master, b"[y/N]:")
        os.write(master, b"\x03")  # Ctrl-C, as typed
        assert child.wait(timeout=120) == 130
        terminal += _drain(master)
        assert child.stdout is not None
        child.stdout.close()
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    text = terminal.decode()
    assert "Interrupted." in text
    assert "Aborted!" not in text
    assert "Traceback" not in text


def test_end_of_input_at_the_approval_prompt_is_no_and_refuses_the_call(golden_copy) -> None:
    # Ctrl-D typed at the question: no answer will come, so the default ([y/N]: no). Before, the prompt's
    # Abort reached the agent as its own exception ("Execution: RAISED typer.exceptions.Abort").
    bundle = golden_copy("successful_run")
    refused = _replay_on_a_terminal(bundle, "n\n")
    done = _replay_on_a_terminal(bundle, "\x04")
    assert done.returncode == refused.returncode == 1, done.stdout + done.stderr
    assert "(end of input: no)" in done.stderr
    assert "Abort" not in done.stdout + done.stderr
    assert done.stdout.replace("\r", "") == refused.stdout.replace("\r", "")


def test_an_answer_that_is_not_yes_or_no_is_asked_again(golden_copy) -> None:
    done = _replay_on_a_terminal(golden_copy("successful_run"), "maybe\nY\nyes\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count("Error: invalid input: answer y or n") == 1
    assert "Recorded behavior: MATCHED" in done.stdout


ESCAPING_AGENT = """
from stepfork import llm_request

def agent():
    return llm_request(model="gpt\\x1b[2J\\x1b]0;PWNED\\x07-x", input={"q": "hi"}, call=lambda: {"a": 1})
"""


def test_the_question_escapes_control_characters_of_a_recorded_name(tmp_path: Path) -> None:
    # The model name comes from the agent (and the bundle): printed raw it could clear the screen or
    # retitle the terminal; the question shows it escaped, as the reports do.
    (tmp_path / "esc.py").write_text(ESCAPING_AGENT)
    bundle = tmp_path / "esc.sftrace"
    recorded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import esc\nfrom stepfork import record\n"
            f"with record('esc', output={str(bundle)!r}): esc.agent()",
        ],
        cwd=tmp_path,
        env=cli_env(),
        check=True,
        capture_output=True,
        text=True,
    )
    assert bundle.is_dir(), recorded.stderr
    done = _replay_on_a_terminal(bundle, "y\n", entrypoint="esc:agent", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Approve llm" in done.stderr
    assert "\x1b" not in done.stderr
    assert "\x07" not in done.stderr
