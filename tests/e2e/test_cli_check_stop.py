"""``stepfork check`` stopped by the user, and option values that are no number of seconds."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from ..corpus_support import quickstart_corpus
from .conftest import cli_env, run_cli, stepfork_executable

HANG = """
import time
from pathlib import Path


def run(order_id=None):
    Path("started").touch()  # the test waits for this before pressing Ctrl-C
    time.sleep(600)
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("check-stop")
    quickstart_corpus(work, 6, diverge_every=3)
    (work / "hang.py").write_text(HANG)
    return work


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_timeout_that_is_no_positive_number_of_seconds_is_one_line(work: Path, value: str) -> None:
    done = run_cli("check", "corpus", "--entrypoint", "quickstart:run_agent", "--timeout", value, cwd=work)
    assert done.code == 2, done.text
    assert "--timeout must be a positive number of seconds" in done.err
    assert "Traceback" not in done.err


def test_ctrl_c_stops_the_check_at_once(work: Path) -> None:
    started = work / "started"
    started.unlink(missing_ok=True)
    command = [stepfork_executable(), "check", "corpus", "--entrypoint", "hang:run", "--jobs", "2"]
    proc = subprocess.Popen(command, cwd=work, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():  # a replay is running
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no replay started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        # before the fix the pool's threads replayed each bundle again in a fresh process, each until its
        # 60 s timeout: Ctrl-C took minutes
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err.decode()
    assert _stepfork_processes_in(work) == []  # no zygote, worker or fallback process left behind


def _stepfork_processes_in(folder: Path) -> list[str]:
    """Command lines of this machine's stepfork check processes whose working directory is ``folder``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if " -m stepfork.analysis." in command and Path(proc / "cwd").resolve() == folder.resolve():
                found.append(command)
        except OSError:  # gone, or not ours to read
            continue
    return found
