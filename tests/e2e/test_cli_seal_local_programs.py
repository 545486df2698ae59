"""The programs the seal starts freely only read this machine (NEWCOMER4 finding F8).

``ip`` was on the seal's list of programs that only read the machine, started freely in any form: ``ip
vrf exec default curl URL`` ran curl live during a frozen replay and the verdict said COMPLETED under
"Network sealed". Now those programs start freely in their read-only forms only (what the standard library
and SDKs run: ``uname -p``, ``ip link``, ``ldconfig -p``, ``arp -an``...); ``ip netns|vrf exec NAME CMD`` is
judged as ``CMD`` (curl: refused), and a form that changes the machine or runs another program (``ip link
set``, ``hostname NAME``, ``gcc -wrapper PROGRAM``, ``arch -x86_64 PROGRAM``) is refused like any program
the seal cannot reach (``child_process_refused``, DIVERGED, exit 1). The real CLI; the server counts every
request.
"""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import COMMAND_AGENT, cli_env, replay_report, report_matching

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX programs")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent, recorded once running ``true`` (what the child does is not in the recording)."""
    work = tmp_path_factory.mktemp("local_programs")
    (work / "local.py").write_text(COMMAND_AGENT)
    env = {**cli_env(), "SF_COMMAND": '["true"]'}
    subprocess.run([sys.executable, "local.py", "local.sftrace"], cwd=work, env=env, check=True, timeout=120)
    return work


def replayed(
    folder: Path, command: list[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[object, dict[str, str]]:
    monkeypatch.setenv("SF_COMMAND", json.dumps(command))
    report = replay_report(folder, "local.sftrace", "local:run_command")
    return report["exit_code_seen"], report_matching(report)


CURL = ["curl", "-s", "-o", "/dev/null", "http://127.0.0.1:{port}/health"]
NOT_PYTHON = "a program that is not Python cannot be sealed"
REFUSED = [
    (["ip", "vrf", "exec", "default", *CURL], "curl", NOT_PYTHON),
    (["ip", "netns", "exec", "stepfork-test", *CURL], "curl", NOT_PYTHON),
    (["ip", "-all", "netns", "exec", *CURL], "curl", NOT_PYTHON),
    (["sh", "-c", "ip vrf exec default " + " ".join(CURL)], "curl", "a program that is not Python"),
    (["gcc", "-wrapper", ",".join(CURL), "--version"], "gcc", "only its forms that read this machine"),
    (["arch", "-x86_64", *CURL], "arch", "only its forms that read this machine"),
    (["ip", "link", "set", "lo", "up"], "ip", "only its forms that read this machine"),
    (["ip", "-batch", "/dev/null"], "ip", "only its forms that read this machine"),
    (["hostname", socket.gethostname()], "hostname", "only its forms that read this machine"),
    (["arp", "-a"], "arp", "only its forms that read this machine"),  # no -n: a reverse DNS query each
]


@pytest.mark.parametrize(
    ("command", "program", "reason"), REFUSED, ids=[" ".join(case[0])[:40] for case in REFUSED]
)
def test_a_local_program_that_could_run_another_or_change_the_machine_is_refused(
    folder: Path,
    seal_server: http.server.ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    program: str,
    reason: str,
) -> None:
    port = seal_server.server_address[1]
    before = seal_server.hits  # type: ignore[attr-defined]
    code, found = replayed(folder, [word.format(port=port) for word in command], monkeypatch)
    assert (code, found["status"], found["code"]) == (1, "DIVERGED", "child_process_refused"), found
    assert f"the command `{program}" in found["message"], found["message"]
    assert reason in found["message"], found["message"]
    assert seal_server.hits == before  # type: ignore[attr-defined]


READ_ONLY = [
    ["uname", "-p"],  # platform.processor(), in every OpenAI SDK request
    ["ip", "link"],  # uuid.getnode()
    ["ip", "-j", "addr", "show", "dev", "lo"],
    ["ip", "netns", "exec", "stepfork-test", "uname", "-a"],  # judged as uname
    ["ldconfig", "-p"],  # ctypes.util.find_library
    ["arp", "-an"],
    ["netstat", "-ian"],
    ["hostname"],
    ["objdump", "-p", "-j", ".dynamic", sys.executable],
]


@pytest.mark.parametrize("command", READ_ONLY, ids=[" ".join(command)[:40] for command in READ_ONLY])
def test_the_read_only_forms_still_start_freely(
    folder: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    code, found = replayed(folder, command, monkeypatch)
    assert (code, found["status"], found["code"]) == (0, "COMPLETE", None), found
