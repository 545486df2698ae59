"""A model server on 127.0.0.1 is sealed like any other (issue 29, CASES C14): a frozen replay of an agent
whose provider is local (vLLM, Ollama, a LiteLLM proxy, a test fake) sends it nothing: the server's counter
stays 0, and a request Stepfork does not serve (a client the capture never saw) raises the seal's error,
``network_sealed``, as the replay's divergence. ``--allow-host 127.0.0.1:PORT`` opens exactly that server.
A real OpenAI SDK against a real OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from local_openai import LocalOpenAI, kept, serving

from stepfork.integrations.openai import instrument_openai
from stepfork.replay import ReplayPolicyError, ReplaySession
from stepfork.trace import record

STEPFORK = Path(sys.executable).parent / "stepfork"
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


def sdk_client(server: LocalOpenAI, *, instrumented: bool = True) -> Any:
    client = kept(openai.OpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0))
    return instrument_openai(client) if instrumented else client


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def causes(error: BaseException | None) -> list[BaseException]:
    chain: list[BaseException] = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def recorded(tmp_path: Path, server: LocalOpenAI) -> Path:
    bundle = tmp_path / "local.sftrace"
    client = sdk_client(server)
    with record("local-model", output=bundle) as session:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)
        session.set_output(reply.choices[0].message.content)
    assert server.count() == 1
    return bundle


def test_a_frozen_replay_sends_the_local_server_nothing(tmp_path: Path, server: LocalOpenAI) -> None:
    bundle = recorded(tmp_path, server)
    client = sdk_client(server)
    with ReplaySession.from_trace(bundle) as session:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)
        session.verify_complete()
    assert reply.choices[0].message.content == "It is 21 degrees and sunny in Paris."
    assert server.count() == 1  # the recording's request only


@pytest.mark.parametrize("how", ["an uninstrumented SDK client", "a raw socket"])
def test_a_request_stepfork_does_not_serve_raises_network_sealed_and_reaches_nothing(
    tmp_path: Path, server: LocalOpenAI, how: str
) -> None:
    bundle = recorded(tmp_path, server)

    def ask() -> Any:
        if how == "a raw socket":  # HTTP written on a socket, which no capture sees (http.client's is)
            body = json.dumps({"model": "gpt-4o-mini", "messages": QUESTION}).encode()
            head = f"POST /v1/chat/completions HTTP/1.0\r\ncontent-length: {len(body)}\r\n\r\n"
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
                sock.sendall(head.encode() + body)
                return sock.recv(4096)
        client = sdk_client(server, instrumented=False)  # the capture never sees its requests
        return client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)

    with ReplaySession.from_trace(bundle) as session, pytest.raises(Exception) as info:
        ask()
    assert server.count() == 1  # nothing reached the server during the replay
    sealed = [e for e in causes(info.value) if isinstance(e, ReplayPolicyError)]
    assert sealed, f"not the seal's error: {info.value!r}"
    assert sealed[0].code == "network_sealed"
    assert f"127.0.0.1:{server.port}" in str(sealed[0])
    assert session.divergence is not None
    assert session.divergence.code == "network_sealed"


PROGRAM = """
import json
import os

import openai


def main():
    client = openai.OpenAI(base_url=os.environ["AGENT_BASE_URL"], api_key="sk-local", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "What is the weather in Paris?"}]
    )
    return reply.choices[0].message.content


if __name__ == "__main__":
    print(json.dumps(main()))
"""


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_through_the_cli_the_seal_refuses_and_allow_host_opens_exactly_that_server(
    tmp_path: Path, server: LocalOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent.py").write_text(PROGRAM)
    monkeypatch.setenv("AGENT_BASE_URL", server.base_url)

    assert cli(tmp_path, "record", "-o", "run.sftrace", "--", sys.executable, "agent.py").returncode == 0
    assert server.count() == 1

    # the program form installs the capture: the recording serves the request
    program = cli(tmp_path, "replay", "run.sftrace", "--", sys.executable, "agent.py")
    assert program.returncode == 0, program.stdout + program.stderr
    assert server.count() == 1

    # --entrypoint has no capture: the SDK's request goes to the socket, and the seal refuses it
    sealed = cli(tmp_path, "replay", "run.sftrace", "--entrypoint", "agent:main", "--json")
    report = json.loads(sealed.stdout)
    assert sealed.returncode == 1
    assert (report["matching"]["status"], report["matching"]["code"]) == ("DIVERGED", "network_sealed")
    assert f"--allow-host 127.0.0.1:{server.port}" in report["matching"]["message"]
    assert server.count() == 1

    entry = ("replay", "run.sftrace", "--entrypoint", "agent:main")
    other = cli(tmp_path, *entry, "--allow-host", "127.0.0.1:1")
    assert other.returncode == 1  # another port of the same host stays sealed
    assert "Network       sealed (allowed: 127.0.0.1:1)" in other.stdout
    assert server.count() == 1

    allowed = cli(tmp_path, *entry, "--allow-host", f"127.0.0.1:{server.port}")
    assert f"Network       sealed (allowed: 127.0.0.1:{server.port})" in allowed.stdout
    assert server.count() == 2  # let through, explicitly: the live server answered
    assert "network sealed" not in allowed.stdout

    bad = cli(tmp_path, *entry, "--allow-host", "127.0.0.1:http")
    assert (bad.returncode, bad.stderr.count("\n")) == (2, 1)
    assert "--allow-host: invalid port in allowed host '127.0.0.1:http'" in bad.stderr


SWALLOWING = """
import os
import socket
import threading
import urllib.parse

import openai


def ping():  # telemetry from a library's thread, HTTP on a bare socket (not captured), its failure swallowed
    try:
        parts = urllib.parse.urlsplit(os.environ["AGENT_BASE_URL"])
        with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
            sock.sendall(b"GET /health HTTP/1.0\\r\\n\\r\\n")
            sock.recv(4096)
    except Exception:
        pass


thread = threading.Thread(target=ping)
thread.start()
thread.join()
client = openai.OpenAI(base_url=os.environ["AGENT_BASE_URL"], api_key="sk-local", max_retries=0)
reply = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "What is the weather in Paris?"}]
)
print(reply.choices[0].message.content)
"""


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_refusal_swallowed_in_a_thread_of_a_replayed_program_is_still_diverged(
    tmp_path: Path, server: LocalOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent.py").write_text(SWALLOWING)
    monkeypatch.setenv("AGENT_BASE_URL", server.base_url)

    assert cli(tmp_path, "record", "-o", "run.sftrace", "--", sys.executable, "agent.py").returncode == 0
    sent = server.count()
    replayed = cli(tmp_path, "replay", "run.sftrace", "--json", "--", sys.executable, "agent.py")
    report = json.loads(replayed.stdout)
    assert report["execution"]["status"] == "COMPLETED"  # the program never saw the refusal
    assert replayed.returncode == 1
    assert (report["matching"]["status"], report["matching"]["code"]) == ("DIVERGED", "network_sealed")
    assert server.count() == sent


LINGERING = """
import os
import sys
import threading
import urllib.request


def main():
    def later():  # a thread the agent leaves running: it sends once the program's main thread has ended
        threading.main_thread().join()
        try:
            urllib.request.urlopen(os.environ["AGENT_BASE_URL"].removesuffix("/v1") + "/health", timeout=5)
            print("late request: sent", file=sys.stderr)
        except Exception as exc:
            print(f"late request: {type(exc).__name__}", file=sys.stderr)

    threading.Thread(target=later).start()  # not a daemon: the interpreter waits for it at exit
    return "done"


if __name__ == "__main__":
    print(main())
"""


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
@pytest.mark.parametrize("form", ["--entrypoint", "-- python"])
def test_a_thread_left_running_after_the_verdict_reaches_nothing(
    tmp_path: Path, server: LocalOpenAI, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    (tmp_path / "agent.py").write_text(LINGERING)
    monkeypatch.setenv("AGENT_BASE_URL", server.base_url)
    done = cli(tmp_path, "record", "-o", "run.sftrace", "--", sys.executable, "agent.py")
    assert "late request: sent" in done.stderr  # recording: the program as it runs live
    assert server.count("/health") == 1
    target = ["--entrypoint", "agent:main"] if form == "--entrypoint" else ["--", sys.executable, "agent.py"]
    replayed = cli(tmp_path, "replay", "run.sftrace", *target)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "late request: ReplayPolicyError" in replayed.stderr
    assert server.count("/health") == 1  # the process stayed sealed until it exited
