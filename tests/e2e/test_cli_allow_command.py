"""``--allow-command NAME`` on ``stepfork minimize``, ``fork`` and ``check``, as on ``replay``.

A frozen replay refuses a child process its seal cannot reach (a program that is not Python, a ``python
-I``): ``child_process_refused``. ``minimize``, ``fork`` and ``check`` replay frozen too, so an agent that
legitimately starts such a child could not be minimized, forked or checked: every attempt was refused, and
minimize could "minimize" a refusal the agent caught instead of its failure. The agent below is written as
the OpenAI SDK's docs write one (``client.chat.completions.create`` on an instrumented ``openai.OpenAI()``)
against a local OpenAI-compatible server on 127.0.0.1 (fresh ids, ``created``, request-id and date
headers per response); it runs ``git --version`` (or a small ``python -I`` script) unrecorded, looks tickets
up with a ``@trace_tool`` whose failure it handles, and reads the model's prose as JSON (its bug). The real
``stepfork`` executable in a subprocess throughout.
"""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import cli_env, run_cli

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX programs"),
    pytest.mark.skipif(shutil.which("git") is None, reason="the agent runs git"),
]

NOTE = "Release 1.4 pins the toolchain and closes the open tickets."


class _Chat(http.server.BaseHTTPRequestHandler):
    """Chat Completions as OpenAI answers them: a fresh id, ``created``, ``x-request-id`` and ``Date``."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        self.server.posts += 1  # type: ignore[attr-defined]
        answer = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:29]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": f"{body.get('model', 'gpt-4o-mini')}-2024-07-18",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": NOTE, "refusal": None, "annotations": []},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 21, "completion_tokens": 12, "total_tokens": 33},
            "service_tier": "default",
            "system_fingerprint": f"fp_{uuid.uuid4().hex[:10]}",
        }
        data = json.dumps(answer).encode()
        self.send_response(200)  # adds Date
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        self.send_header("openai-processing-ms", str(120 + uuid.uuid4().int % 300))
        self.end_headers()
        self.wfile.write(data)


AGENT = '''
"""Release helper: a model writes the release note for the toolchain in use."""

import json
import subprocess
import sys

import openai

from stepfork import trace_tool
from stepfork.integrations.openai import instrument_openai

client = instrument_openai(openai.OpenAI())  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment


@trace_tool
def open_tickets(project: str) -> list:
    return [{"id": "T-1", "title": "pin git"}, {"id": "T-2", "title": "bump python"}]


def git_version() -> str:
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def python_version() -> str:
    script = "import sys; print(sys.version.split()[0])"  # isolated: no site, no PYTHON* variables
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _note(toolchain: str) -> str:
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"Write the release note for {toolchain}."}],
    )
    return reply.choices[0].message.content


def _tickets() -> list:
    try:
        return open_tickets("release")
    except Exception:  # the tracker is optional
        return []


def run_agent():
    toolchain = git_version()
    tickets = _tickets()
    note = _note(toolchain)
    return {"note": json.loads(note), "tickets": len(tickets)}  # bug: the model answers in prose


def run_agent_fixed():
    toolchain = git_version()
    tickets = _tickets()
    return {"toolchain": toolchain, "note": _note(toolchain), "tickets": len(tickets)}


def run_agent_caught():
    try:
        toolchain = git_version()
    except OSError:  # as agents guard an optional program
        toolchain = "git (unknown version)"
    tickets = _tickets()
    note = _note(toolchain)
    return {"note": json.loads(note), "tickets": len(tickets)}


def run_agent_two_programs():
    toolchain = f"{git_version()}, Python {python_version()}"
    return {"toolchain": toolchain, "note": _note(toolchain), "tickets": len(_tickets())}
'''

RECORD = """
import sys

from stepfork import record

import release_helper

try:
    with record("release-helper", output=sys.argv[2], overwrite=True) as session:
        session.set_output(getattr(release_helper, sys.argv[1])())
except ValueError:
    pass  # the agent's failure (JSONDecodeError), recorded as the run's error
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The agent's project with one recording per entrypoint, recorded live against the local server
    (which keeps serving: a fork runs its model call live)."""
    work = tmp_path_factory.mktemp("allowcmd")
    (work / "release_helper.py").write_text(textwrap.dedent(AGENT))
    (work / "record_run.py").write_text(RECORD)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    server.posts = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    env = {
        "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
        "OPENAI_API_KEY": "sk-test-allowcmd",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)  # every stepfork process below builds the same client
        for function in ("run_agent", "run_agent_caught", "run_agent_two_programs"):
            command = [sys.executable, "record_run.py", function, f"{function}.sftrace"]
            subprocess.run(command, cwd=work, env=cli_env(), check=True, timeout=120)
        assert server.posts == 3  # type: ignore[attr-defined]  # each recording reached the model
        (work / "runs").mkdir()
        shutil.copytree(work / "run_agent.sftrace", work / "runs" / "run_agent.sftrace")
        try:
            yield work
        finally:
            server.shutdown()
            server.server_close()


REFUSED = "child process refused during frozen replay"


def one_line_with(text: str, phrase: str) -> str:
    """The one line of ``text`` holding ``phrase`` (it must be there, once)."""
    lines = [line for line in text.splitlines() if phrase in line]
    assert len(lines) == 1, text
    return lines[0]


def test_minimize_reports_the_refusal_and_minimizes_the_failure_with_allow_command(folder: Path) -> None:
    """Without the option the original replay is refused: exit 1 and one line naming the command and
    ``--allow-command``, never a search. With it the failure (the agent's JSONDecodeError) is minimized:
    the ticket lookup the agent guards is removed, and the JSON result records the option."""
    for function in ("run_agent", "run_agent_caught"):  # raised through, and caught by the agent
        entry = f"release_helper:{function}"
        refused = run_cli("minimize", f"{function}.sftrace", "-e", entry, "-o", "m.sftrace", cwd=folder)
        assert refused.code == 1, refused.text
        line = one_line_with(refused.out, "Failed to detect original failure signature")
        assert "child_process_refused" in line, line
        assert "--allow-command" in line, line
        assert not (folder / "m.sftrace").exists()

    out = folder / "minimal.sftrace"
    done = run_cli(
        "minimize", "run_agent_caught.sftrace", "-e", "release_helper:run_agent_caught", "-o", out,
        "--allow-command", "git", "--json", cwd=folder,
    )  # fmt: skip
    assert done.code == 0, done.text
    result = json.loads(done.out)
    assert result["signature"]["kind"] == "exception"
    assert result["signature"]["detail"] == "json.decoder.JSONDecodeError"
    assert result["signature"]["divergence"] is None
    assert [line.split(": ", 1)[1] for line in result["removed"]] == ["tool open_tickets"]
    assert result["network"] == {"policy": "sealed", "allowed_hosts": [], "allowed_commands": ["git"]}

    text = run_cli(
        "minimize", "run_agent.sftrace", "-e", "release_helper:run_agent", "-o", "text.sftrace",
        "--allow-command", "git", cwd=folder,
    )  # fmt: skip
    assert text.code == 0, text.text
    assert "Network:         sealed (allowed commands: git)" in text.out, text.out


def test_fork_reports_the_refusal_and_forks_with_allow_command(folder: Path) -> None:
    """``git`` runs before the fork point, in the frozen part: refused without the option (exit 1, the
    run recorded as failed, its error line naming the command); with it the run goes live at the model
    call and completes."""
    bundle = folder / "run_agent.sftrace"
    steps = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]
    llm = next(event["step"] for event in steps if event["type"] == "llm_request")
    fork = ["fork", "run_agent.sftrace", "--step", str(llm), "-e", "release_helper:run_agent_fixed"]

    refused = run_cli(*fork, "-o", "refused.sftrace", cwd=folder)
    assert refused.code == 1, refused.text
    line = one_line_with(refused.out, REFUSED)
    assert "`git --version`" in line, line
    assert "--allow-command git" in line, line

    done = run_cli(*fork, "-o", "forked.sftrace", "--allow-command", "git", "--json", cwd=folder)
    assert done.code == 0, done.text
    result = json.loads(done.out)
    assert (result["status"], result["frozen_calls"], result["live_calls"]) == ("completed", 1, 1)
    assert result["result"]["note"] == NOTE
    assert result["result"]["toolchain"].startswith("git version ")
    assert result["network"]["allowed_commands"] == ["git"]
    lineage = json.loads((folder / "forked.sftrace" / "fork.json").read_text())
    assert lineage["allow_commands"] == ["git"]

    text = run_cli(*fork, "-o", "fork-text.sftrace", "--allow-command", "git", cwd=folder)
    assert text.code == 0, text.text
    assert "Network:      sealed (allowed commands: git)" in text.out, text.out


def test_check_reports_the_refusal_and_checks_with_allow_command(folder: Path) -> None:
    """Without the option the bundle DIVERGED on ``child_process_refused`` (exit 1); with it the recorded
    failure is reproduced (exit 0), and the summary and each receipt name the option."""
    check = ["check", "runs", "-e", "release_helper:run_agent", "--jobs", "1"]
    refused = run_cli(*check, "--json", cwd=folder)
    assert refused.code == 1, refused.text
    verdict = json.loads(refused.out)["verdicts"][0]
    assert (verdict["verdict"], verdict["code"]) == ("DIVERGED", "child_process_refused"), verdict
    assert REFUSED in verdict["detail"]
    assert "--allow-command git" in verdict["detail"]
    text = run_cli(*check, cwd=folder)
    assert text.code == 1
    one_line_with(text.out, "child_process_refused")

    done = run_cli(*check, "--allow-command", "git", "--receipts", "receipts", cwd=folder)
    assert done.code == 0, done.text
    assert "REPRODUCED FAILURE" in done.out
    assert "Network       sealed (allowed commands: git)" in done.out, done.out
    (receipt,) = [json.loads(p.read_text()) for p in (folder / "receipts").iterdir()]
    assert (receipt["verdict"], receipt["replay_verdict"]) == ("passed", "REPRODUCED FAILURE")
    assert receipt["allow_commands"] == ["git"]


@pytest.mark.parametrize("command", ["check", "fork", "minimize"])
def test_allow_command_opens_only_the_program_it_names(folder: Path, command: str) -> None:
    """``--allow-command git`` lets git run, not the isolated Python the agent also starts: that one is
    still refused, by name."""
    bundle = "run_agent_two_programs.sftrace"
    entry = "release_helper:run_agent_two_programs"
    if command == "check":
        (folder / "two").mkdir(exist_ok=True)
        shutil.copytree(folder / bundle, folder / "two" / bundle, dirs_exist_ok=True)
        result = run_cli("check", "two", "-e", entry, "--jobs", "1", "--allow-command", "git", cwd=folder)
        assert result.code == 1, result.text
        line = one_line_with(result.out, "child_process_refused")
    elif command == "fork":
        events = [json.loads(line) for line in (folder / bundle / "events.jsonl").read_text().splitlines()]
        last = [event["step"] for event in events if event["type"] == "tool_call"][-1]
        result = run_cli(
            "fork", bundle, "--step", str(last), "-e", entry, "-o", "two-fork.sftrace", "--overwrite",
            "--allow-command", "git", "--allow-live-tool", "open_tickets", cwd=folder,
        )  # fmt: skip
        assert result.code == 1, result.text
        line = one_line_with(result.out, REFUSED)
    else:
        result = run_cli(
            "minimize", bundle, "-e", entry, "-o", "two-min.sftrace", "--allow-command", "git", cwd=folder
        )
        assert result.code == 1, result.text
        line = one_line_with(result.out, REFUSED)
    assert "-I makes Python ignore the environment the seal" in line, line
    assert "git --version" not in line


@pytest.mark.parametrize("command", ["check", "fork", "minimize"])
def test_a_malformed_allow_command_is_one_line_exit_2(folder: Path, command: str) -> None:
    args = {
        "check": ["check", "runs", "-e", "release_helper:run_agent"],
        "fork": ["fork", "run_agent.sftrace", "--step", "1", "-e", "release_helper:run_agent", "-o", "x"],
        "minimize": ["minimize", "run_agent.sftrace", "-e", "release_helper:run_agent"],
    }[command]
    result = run_cli(*args, "--allow-command", " ", cwd=folder)
    assert result.code == 2, result.text
    assert result.err.strip().splitlines() == [
        "--allow-command: invalid allowed command ' ': expected a program's name or path, for example curl "
        "or /usr/bin/curl"
    ]
