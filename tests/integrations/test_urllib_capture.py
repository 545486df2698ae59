"""A program calling its model with the standard library's ``urllib.request`` (NEWCOMER3 finding 13: it was
recorded with 0 LLM calls and could never replay) is recorded by ``stepfork record --`` in the shapes of the
httpx and urllib3 captures, and replays sealed: the server is never called again, the program reads the
same answers, a 404 is still urllib's ``HTTPError``, and an SDK using httpx replays the same bundle.

The program is written as small scripts write it (``urllib.request.Request`` + ``urlopen``, ``json.load``,
an SSE body read line by line); the model is a realistic OpenAI-compatible server on 127.0.0.1
(helpers/local_openai.py: fresh ids, created times, request ids and dates per response).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import LocalOpenAI, serving

STEPFORK = Path(sys.executable).parent / "stepfork"

PROGRAM = '''
"""A script calling an OpenAI-compatible API with the stdlib, as many small scripts do."""
import json, os, urllib.error, urllib.request

BASE = os.environ["OPENAI_BASE_URL"]
HEADERS = {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}


def ask(question, stream=False):
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}], "stream": stream}
    req = urllib.request.Request(BASE + "/chat/completions", data=json.dumps(body).encode(), headers=HEADERS)
    with urllib.request.urlopen(req) as response:
        if not stream:
            return json.load(response)["choices"][0]["message"]["content"]
        parts = []
        for line in response:  # Server-Sent Events, line by line
            line = line.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line[len("data: "):])
                parts += [c["delta"].get("content") or "" for c in chunk["choices"]]
        return "".join(parts)


try:
    urllib.request.urlopen(BASE + "/nothing-here")
except urllib.error.HTTPError as exc:
    print("missing:", exc.code)
print("answer:", ask("What is the weather in Paris?"))
if not os.environ.get("FIRST_ONLY"):
    print("streamed:", ask("What is the weather in Rome?", stream=True))
'''

SDK_PROGRAM = '''
"""The same first question through the OpenAI SDK (httpx)."""
import json, os, urllib.error, urllib.request
import openai

try:
    urllib.request.urlopen(os.environ["OPENAI_BASE_URL"] + "/nothing-here")
except urllib.error.HTTPError as exc:
    print("missing:", exc.code)
client = openai.OpenAI()
answer = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "What is the weather in Paris?"}], stream=False
)
print("answer:", answer.choices[0].message.content)
'''


@pytest.fixture(scope="module")
def server() -> Iterator[LocalOpenAI]:
    with serving() as state:
        yield state


def _env(server: LocalOpenAI) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test-0000000000000000000000",
        "PYTHONPATH": "",
    }


def _stepfork(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=180
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, server: LocalOpenAI) -> tuple[Path, str]:
    """The program's folder holding ``run.sftrace``, and what the program printed when recorded."""
    folder = tmp_path_factory.mktemp("urllib")
    (folder / "agent.py").write_text(PROGRAM)
    (folder / "sdk_agent.py").write_text(SDK_PROGRAM)
    done = _stepfork(folder, _env(server), "record", "-o", "run.sftrace", "--", sys.executable, "agent.py")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder, done.stdout


def test_record_captures_every_urllib_request_in_the_httpx_capture_shapes(recorded: tuple[Path, str]) -> None:
    from stepfork.trace import load_trace

    folder, printed = recorded
    assert "missing: 404" in printed
    assert "answer: " in printed
    assert "streamed: " in printed
    events = load_trace(folder / "run.sftrace").events
    calls = [e for e in events if str(e.type) in ("llm_request", "tool_call")]
    assert [str(e.type) for e in calls] == ["tool_call", "llm_request", "llm_request"]
    results = [e for e in events if str(e.type) in ("llm_response", "tool_result")]
    plain, streamed = (r.output for r in results[1:])
    assert plain["json"]["choices"][0]["message"]["content"] in printed
    assert streamed["sse"]["end"] == "finished"  # a stream is recorded as its events, as httpx records it
    assert "sk-test-0000000000000000000000" not in (folder / "run.sftrace" / "events.jsonl").read_text()


def test_replay_serves_the_recorded_answers_without_calling_the_server(
    recorded: tuple[Path, str], server: LocalOpenAI
) -> None:
    folder, printed = recorded
    sent = len(server.requests)
    done = _stepfork(folder, _env(server), "replay", "run.sftrace", "--", sys.executable, "agent.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Dependency matching: COMPLETE" in done.stdout
    for line in printed.splitlines():  # the same answers, a 404 still urllib's HTTPError
        assert line in done.stdout
    assert len(server.requests) == sent


def test_an_openai_sdk_recording_replays_through_urllib(
    tmp_path: Path, recorded: tuple[Path, str], server: LocalOpenAI
) -> None:
    # the same requests through httpx (the SDK) and urllib match: one recorded shape for every capture
    folder, _ = recorded
    bundle = str(tmp_path / "sdk.sftrace")
    sdk = _stepfork(folder, _env(server), "record", "-o", bundle, "--", sys.executable, "sdk_agent.py")
    assert sdk.returncode == 0, sdk.stdout + sdk.stderr
    sent = len(server.requests)
    env = {**_env(server), "FIRST_ONLY": "1"}
    done = _stepfork(folder, env, "replay", bundle, "--", sys.executable, "agent.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Dependency matching: COMPLETE" in done.stdout
    answer = next(line for line in sdk.stdout.splitlines() if line.startswith("answer: "))
    assert answer in done.stdout  # the SDK run's answer, read by the urllib program
    assert len(server.requests) == sent
