"""``--json`` of the commands that run the agent in their own process (``fork``, ``minimize``): stdout holds
the JSON document alone, whatever the agent prints (docs/cli.md, "--json"); an entrypoint module that calls
``os._exit`` at import is refused as one that calls ``sys.exit``, never a silent exit 0.

Before, the agent's import-time and run-time prints came first on stdout (``NOISE AT IMPORT\\n{...}``: no
JSON for a script), and ``os._exit(0)`` at import ended ``replay``/``fork``/``minimize`` with status 0 and no
output at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import run_cli

NOISY = """
import subprocess, sys

print("noise at import")
from quickstart import run_agent as _run_agent


def run_agent():
    print("noise in the run")
    subprocess.run([sys.executable, "-c", "print('noise from a child process')"], check=True)
    return _run_agent()
"""

HARD_EXIT = "import os\n\nos._exit(0)\n\ndef run():\n    pass\n"


@pytest.mark.parametrize("command", ["fork", "minimize"])
def test_the_agents_prints_go_to_stderr_never_into_the_json(quickstart: Path, command: str) -> None:
    (quickstart / "noisy.py").write_text(NOISY)
    extra = ["--step", "1"] if command == "fork" else []
    given = ["-e", "noisy:run_agent", "-o", "out.sftrace", "--json"]
    result = run_cli(command, "notify.sftrace", *extra, *given, cwd=quickstart)
    document = json.loads(result.out)  # the whole of stdout, nothing before or after
    assert isinstance(document, dict)
    if command == "minimize":  # the quickstart's recording completes: nothing to minimize
        assert (document["error"], document["exit_code"], result.code) == ("no_failure", 1, 1)
    else:
        assert document["status"] in ("completed", "failed")
    assert "noise at import" in result.err  # minimize's replays run in its zygote, their prints dropped
    if command == "fork":
        for line in ("noise in the run", "noise from a child process"):
            assert line in result.err
    assert "noise" not in result.out


@pytest.mark.parametrize("command", ["replay", "fork", "minimize"])
def test_os_exit_at_import_is_an_unresolvable_entrypoint_exit_2(quickstart: Path, command: str) -> None:
    (quickstart / "hard_exit.py").write_text(HARD_EXIT)
    fork = ["--step", "1", "-o", "f.sftrace", "--json"]
    extra = {"replay": [], "fork": fork, "minimize": ["--json"]}[command]
    result = run_cli(command, "notify.sftrace", "-e", "hard_exit:run", *extra, cwd=quickstart)
    assert result.code == 2, result.text
    assert "importing it called os._exit(0)" in result.err
    assert "if __name__ == '__main__':" in result.err
    assert "Traceback" not in result.text
    if command != "replay":
        document = json.loads(result.out)
        assert document["exit_code"] == 2
        assert "os._exit(0)" in document["message"]


FORKS_AT_IMPORT = """
import multiprocessing

from quickstart import run_agent


def _child():
    pass


_process = multiprocessing.get_context("fork").Process(target=_child)
_process.start()
_process.join()
CHILD_EXIT = _process.exitcode
"""


def test_a_process_forked_at_import_still_ends_with_os_exit(quickstart: Path) -> None:
    # multiprocessing's fork child ends with os._exit: refused there, the child ran replay's own code on
    (quickstart / "forks.py").write_text(FORKS_AT_IMPORT)
    result = run_cli("replay", "notify.sftrace", "-e", "forks:run_agent", cwd=quickstart)
    assert result.code == 0, result.text
    assert "Unable to resolve entrypoint" not in result.text
    assert "Status: COMPLETED" in result.out
