"""The seal judges a child by the program it starts, not by its name or the agent's words (NEWCOMER5 F5-F7).

Before, three kinds of child ran live during a frozen replay whose verdict said MATCHED: a Python whose
isolation flags came from elsewhere than the agent's argv (a script's ``#!/usr/bin/python3 -I`` or
``#!/usr/bin/env -S python3 -E`` line; ``-I`` after ``--check-hash-based-pycs default``), so the seal's
``sitecustomize`` never ran; a shell script named ``python3``, trusted as Python by its name; and a
program started with ``LD_PRELOAD`` in its environment, whose preloaded library connected from native code.
Now each is refused before it starts (``child_process_refused``, DIVERGED, exit 1) and the server counts
nothing, while the legitimate forms still run: a plain ``python3 x.py``, a console script, a pyenv shim
(sealed: their request is refused, ``network_sealed``), and a program inheriting the replay's own
``LD_PRELOAD``. The real CLI, real child processes; the server counts every request.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import COMMAND_AGENT, cli_env, replay_report, report_matching

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX programs")

CHILD = """
import os
import urllib.request

urllib.request.urlopen("http://127.0.0.1:%s/child" % os.environ["SF_PORT"], timeout=10).read()
"""

PRELOAD = r"""
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

__attribute__((constructor)) static void reach(void) {  /* what no audit hook sees: native code */
    const char *port = getenv("SF_PORT");
    if (!port) return;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(atoi(port));
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
        const char *r = "GET /preload HTTP/1.0\r\n\r\n";
        char b[256];
        write(s, r, strlen(r));
        read(s, b, sizeof b);
    }
    close(s);
}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, seal_server: http.server.ThreadingHTTPServer) -> Path:
    """The agent, recorded once running ``true`` (what the child does is not in the recording), with the
    programs the cases start: scripts whose ``#!`` line isolates Python, a shell script named ``python3``
    that runs curl, a library whose constructor connects to the server."""
    work = tmp_path_factory.mktemp("seal_programs")
    (work / "agent.py").write_text(COMMAND_AGENT)
    (work / "child.py").write_text(textwrap.dedent(CHILD))
    python = shutil.which("python3") or sys.executable
    scripts = {
        "cli_isolated": f"#!{python} -I\n",
        "cli_env_split": "#!/usr/bin/env -S python3 -E\n",
        "cli_combined": f"#!{python} -sE\n",
        "cli_console": "#!/usr/bin/env python3\n",
    }
    for name, first in scripts.items():
        (work / name).write_text(first + textwrap.dedent(CHILD))
        (work / name).chmod(0o755)
    (work / "wrap").mkdir()
    port = seal_server.server_address[1]
    wrapper = f'#!/bin/sh\ncurl -s -o /dev/null http://127.0.0.1:{port}/wrapper\nexec python3 "$@"\n'
    (work / "wrap" / "python3").write_text(wrapper)
    (work / "wrap" / "python3").chmod(0o755)
    env = {**cli_env(), "SF_COMMAND": '["true"]'}
    recording = [sys.executable, "agent.py", "programs.sftrace"]
    subprocess.run(recording, cwd=work, env=env, check=True, timeout=120)
    return work


@pytest.fixture(scope="module")
def preload(folder: Path) -> Path:
    """A shared library whose constructor sends a GET to ``SF_PORT`` on 127.0.0.1 (built with the system's
    C compiler, as the newcomer's repro did)."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the preloaded library")
    (folder / "reach.c").write_text(PRELOAD)
    library = folder / "reach.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", library, folder / "reach.c"], check=True, timeout=120)
    return library


def replayed(
    folder: Path,
    seal_server: http.server.ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    env: dict[str, str] | None = None,
) -> tuple[object, dict[str, str], int]:
    """Replay the recording frozen with the agent starting ``command`` (its ``env`` added to the agent's):
    the exit code, the report's ``matching`` and how many requests the server got meanwhile."""
    monkeypatch.setenv("SF_COMMAND", json.dumps(command))
    monkeypatch.setenv("SF_ENV", json.dumps(env or {}))
    monkeypatch.setenv("SF_PORT", str(seal_server.server_address[1]))
    before = seal_server.hits  # type: ignore[attr-defined]
    report = replay_report(folder, "programs.sftrace", "agent:run_command")
    return report["exit_code_seen"], report_matching(report), seal_server.hits - before  # type: ignore[attr-defined]


ISOLATED = "makes Python ignore the environment the seal travels in"
REFUSED = [
    (["./cli_isolated"], {}, "./cli_isolated", "-I " + ISOLATED),  # F5: #!/usr/bin/python3 -I
    (["./cli_env_split"], {}, "./cli_env_split", "-E " + ISOLATED),  # F5: #!/usr/bin/env -S python3 -E
    (["./cli_combined"], {}, "./cli_combined", "-E " + ISOLATED),  # Debian's lsb_release: -Es
    (["python3", "--check-hash-based-pycs", "default", "-I", "child.py"], {}, "python3", "-I " + ISOLATED),
    (["python3", "-sI", "child.py"], {}, "python3", "-I " + ISOLATED),
    (["python3", "-W", "ignore", "-X", "utf8", "-E", "child.py"], {}, "python3", "-E " + ISOLATED),
    (["env", "-u", "PYTHONPATH", "python3", "child.py"], {}, "python3", "drops the seal"),
    (["./wrap/python3", "child.py"], {}, "./wrap/python3", "a program that is not Python"),  # F6
]


@pytest.mark.parametrize(
    ("command", "env", "program", "reason"), REFUSED, ids=[" ".join(case[0])[:48] for case in REFUSED]
)
def test_a_child_the_seal_cannot_reach_is_refused_before_it_starts(
    folder: Path,
    seal_server: http.server.ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    env: dict[str, str],
    program: str,
    reason: str,
) -> None:
    code, found, hits = replayed(folder, seal_server, monkeypatch, command, env)
    assert (code, found["status"], found["code"], hits) == (1, "DIVERGED", "child_process_refused", 0), found
    assert f"the command `{program}" in found["message"], found["message"]
    assert reason in found["message"], found["message"]


@pytest.mark.parametrize("variable", ["LD_PRELOAD", "LD_AUDIT"])
def test_a_local_program_started_with_a_loader_variable_is_refused(  # F7
    folder: Path,
    seal_server: http.server.ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    preload: Path,
    variable: str,
) -> None:
    code, found, hits = replayed(folder, seal_server, monkeypatch, ["uname", "-a"], {variable: str(preload)})
    assert (code, found["status"], found["code"], hits) == (1, "DIVERGED", "child_process_refused", 0), found
    assert f"its environment sets {variable}" in found["message"], found["message"]


def test_a_sealed_python_child_started_with_a_loader_variable_is_refused_too(
    folder: Path, seal_server: http.server.ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, preload: Path
) -> None:
    """A Python child seals itself only once it runs: a preloaded library's constructor runs before."""
    command, env = ["python3", "-c", "pass"], {"LD_PRELOAD": str(preload)}
    code, found, hits = replayed(folder, seal_server, monkeypatch, command, env)
    assert (code, found["code"], hits) == (1, "child_process_refused", 0), found


def test_allow_command_lets_the_program_start_with_its_loader_variable(
    folder: Path, seal_server: http.server.ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, preload: Path
) -> None:
    monkeypatch.setenv("SF_COMMAND", '["uname", "-a"]')
    monkeypatch.setenv("SF_ENV", json.dumps({"LD_PRELOAD": str(preload)}))
    monkeypatch.setenv("SF_PORT", str(seal_server.server_address[1]))
    before = seal_server.hits  # type: ignore[attr-defined]
    report = replay_report(folder, "programs.sftrace", "agent:run_command", "--allow-command", "uname")
    assert (report["exit_code_seen"], report_matching(report)["code"]) == (0, None), report
    assert seal_server.hits == before + 1  # type: ignore[attr-defined]  # named, so it ran (and is counted)
    assert "uname" in json.dumps(report["network"])


def test_the_replays_own_loader_variables_are_inherited_freely(
    folder: Path, seal_server: http.server.ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, preload: Path
) -> None:
    """A user whose whole shell preloads a library (an allocator) runs every child with it: not refused.
    (The library here reaches the server only where ``SF_PORT`` is set: not in the replay's process.)"""
    monkeypatch.setenv("LD_PRELOAD", str(preload))
    monkeypatch.setenv("SF_COMMAND", '["uname", "-a"]')
    monkeypatch.delenv("SF_PORT", raising=False)
    monkeypatch.setenv("SF_ENV", "{}")
    report = replay_report(folder, "programs.sftrace", "agent:run_command")
    assert (report["exit_code_seen"], report_matching(report)["code"]) == (0, None), report


def pyenv_shim() -> tuple[str, str] | None:
    """pyenv's ``python3`` shim and an installed version of Python 3.8+ for ``PYENV_VERSION``, or None."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    shim = os.path.join(root, "shims", "python3")
    if not (os.path.isfile(shim) and os.access(shim, os.X_OK)):
        return None
    versions = os.path.join(root, "versions")
    names = os.listdir(versions) if os.path.isdir(versions) else []
    found = [name for name in names if name.split(".")[:1] == ["3"] and int(name.split(".")[1]) >= 8]
    return (shim, sorted(found)[0]) if found else None


SEALED = [
    (["python3", "child.py"], {}),
    (["python3", "-s", "-X", "utf8", "child.py"], {}),
    ([sys.executable, "-W", "ignore", "child.py"], {}),
    (["./cli_console"], {}),  # #!/usr/bin/env python3: a console script
    (["env", "python3", "child.py"], {}),
]
if (SHIM := pyenv_shim()) is not None:  # pyenv's bash shim hands over to the Python it picks
    SEALED.append(([SHIM[0], "child.py"], {"PYENV_VERSION": SHIM[1]}))


@pytest.mark.parametrize(("command", "env"), SEALED, ids=[" ".join(case[0])[-48:] for case in SEALED])
def test_a_python_child_in_its_legitimate_forms_is_sealed(
    folder: Path,
    seal_server: http.server.ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    env: dict[str, str],
) -> None:
    """It starts, seals itself, and its request is the refusal (``network_sealed``), not a refused start."""
    code, found, hits = replayed(folder, seal_server, monkeypatch, command, env)
    assert (code, found["status"], found["code"], hits) == (1, "DIVERGED", "network_sealed", 0), found
    assert "a child process started during the replay" in found["message"], found["message"]


def test_the_pyenv_shim_is_found_here() -> None:
    """The shim case above runs on this machine (pyenv is installed for the interpreter matrix)."""
    if shutil.which("pyenv") is None and pyenv_shim() is None:
        pytest.skip("pyenv is not installed")
    assert pyenv_shim() is not None
