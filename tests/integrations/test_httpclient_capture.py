"""A program calling its model with the standard library's ``http.client`` directly (an
``HTTPConnection``'s ``request`` and ``getresponse``) is recorded by ``stepfork record --`` in the shapes of
the ``urllib.request`` and requests captures, and replays sealed: the server is never called again (not
even running), a changed request diverges at its path, a recorded connection error is raised again, and
a request through ``urllib.request`` or requests, which send through ``http.client`` themselves, is still
recorded once.

The model is a realistic OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py: fresh ids,
created times, request ids and dates per response), started by the tests.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_openai import LocalOpenAI, serving

STEPFORK = Path(sys.executable).parent / "stepfork"
KEY = "sk-test-0000000000000000000000"

PROGRAM = '''
"""One health check and one question, the same requests through the client named on the command line."""
import json, os, sys, urllib.parse

BASE = os.environ["OPENAI_BASE_URL"]
HEADERS = {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
QUESTION = os.environ.get("QUESTION", "What is the weather in Paris?")
BODY = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}]}).encode()
ROOT = BASE.removesuffix("/v1")
how = sys.argv[1]

if how == "http.client":
    import http.client

    parts = urllib.parse.urlsplit(BASE)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("GET", "/health")
    response = connection.getresponse()
    print("health:", response.status, json.loads(response.read())["status"])
    connection.request("POST", parts.path + "/chat/completions", BODY, HEADERS)  # the same connection again
    response = connection.getresponse()
    reply, request_id = json.load(response), response.getheader("x-request-id")
    connection.close()
    if os.environ.get("STREAMED"):  # Server-Sent Events, read line by line
        streamed = json.dumps({**json.loads(BODY), "stream": True})
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("POST", parts.path + "/chat/completions", streamed, HEADERS)
        pieces = []
        for line in connection.getresponse():
            line = line.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line[len("data: "):])
                pieces += [c["delta"].get("content") or "" for c in chunk["choices"]]
        connection.close()
        print("streamed:", "".join(pieces))
    port = os.environ.get("REFUSED_PORT")
    if port:
        try:
            http.client.HTTPConnection("127.0.0.1", int(port), timeout=5).request("GET", "/")
            print("refused: no")
        except ConnectionRefusedError as exc:
            print("refused:", type(exc).__name__)
elif how == "urllib":
    import urllib.request

    with urllib.request.urlopen(ROOT + "/health") as response:
        print("health:", response.status, json.load(response)["status"])
    request = urllib.request.Request(BASE + "/chat/completions", data=BODY, headers=HEADERS)
    with urllib.request.urlopen(request) as response:
        reply, request_id = json.load(response), response.headers["x-request-id"]
else:
    import requests

    response = requests.get(ROOT + "/health", timeout=10)
    print("health:", response.status_code, response.json()["status"])
    response = requests.post(BASE + "/chat/completions", data=BODY, headers=HEADERS, timeout=10)
    reply, request_id = response.json(), response.headers["x-request-id"]
print("answer:", reply["choices"][0]["message"]["content"])
print("request id:", request_id)
'''

BY_HAND = """
import os, urllib.parse
import http.client

parts = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
connection.putrequest("GET", "/health")
connection.endheaders()
print("health:", connection.getresponse().status)
"""


def _env(server: LocalOpenAI, **extra: str) -> dict[str, str]:
    base = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY, "PYTHONPATH": ""}
    return {**os.environ, **base, **extra}


def _stepfork(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=180
    )


def _record(folder: Path, server: LocalOpenAI, how: str, bundle: str, **extra: str) -> str:
    done = _stepfork(
        folder, _env(server, **extra), "record", "-o", bundle, "--", sys.executable, "agent.py", how
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _replay(folder: Path, env: dict[str, str], bundle: str, how: str) -> subprocess.CompletedProcess[str]:
    """``stepfork replay --json`` of the program (what it prints goes to stderr, the report to stdout)."""
    return _stepfork(folder, env, "replay", bundle, "--json", "--", sys.executable, "agent.py", how)


def _calls(bundle: Path) -> list[tuple[str, Any, Any]]:
    """``(type, input, output)`` of every call of a bundle, in order."""
    from stepfork.trace import load_trace

    events = load_trace(bundle).events
    requests = [e for e in events if str(e.type) in ("llm_request", "tool_call")]
    results = {e.parent_id: e for e in events if str(e.type) in ("llm_response", "tool_result")}
    return [(str(e.type), e.input, results[e.id].output) for e in requests]


@pytest.fixture(scope="module")
def server() -> Iterator[LocalOpenAI]:
    with serving() as state:
        yield state


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("httpclient")
    (where / "agent.py").write_text(PROGRAM)
    (where / "by_hand.py").write_text(BY_HAND)
    return where


@pytest.fixture(scope="module")
def recorded(folder: Path, server: LocalOpenAI) -> dict[str, str]:
    """``{client: what the program printed}`` of one recording per client (``CLIENT.sftrace``)."""
    clients = ("http.client", "urllib", "requests")
    return {how: _record(folder, server, how, f"{how}.sftrace") for how in clients}


def test_each_request_is_recorded_once_in_the_same_shapes_through_every_stdlib_client(
    folder: Path, recorded: dict[str, str], server: LocalOpenAI
) -> None:
    root = server.base_url.removesuffix("/v1")
    shapes = {}
    for how, printed in recorded.items():
        assert "health: 200 ok" in printed
        calls = _calls(folder / f"{how}.sftrace")
        # one call per request: http.client under urllib.request and urllib3 is not recorded a second time
        assert [kind for kind, _, _ in calls] == ["tool_call", "llm_request"], how
        (_, health, health_out), (_, question, answer) = calls
        assert health == {"method": "GET", "url": f"{root}/health", "body": None}
        assert answer["json"]["choices"][0]["message"]["content"] in printed
        assert answer["json"]["id"].startswith("chatcmpl-")
        assert f"request id: {answer['headers']['x-request-id']}" in printed
        shapes[how] = (health, question, sorted(health_out), sorted(answer), sorted(answer["headers"]))
        assert KEY not in (folder / f"{how}.sftrace" / "events.jsonl").read_text()
    assert shapes["http.client"] == shapes["urllib"] == shapes["requests"]
    assert shapes["http.client"][1] == {
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": {},
        "body": {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        },
    }


def test_a_frozen_replay_serves_every_request_and_sends_nothing(
    tmp_path: Path, folder: Path, server: LocalOpenAI
) -> None:
    with serving() as own:  # a server of this test alone, stopped before the second replay
        printed = _record(folder, own, "http.client", str(tmp_path / "run.sftrace"))
        sent = len(own.requests)
        assert sent == 2
        running = _replay(folder, _env(own), str(tmp_path / "run.sftrace"), "http.client")
        assert len(own.requests) == sent  # nothing reached the server
        env = _env(own)
    stopped = _replay(folder, env, str(tmp_path / "run.sftrace"), "http.client")
    for done in (running, stopped):
        report = json.loads(done.stdout)
        assert done.returncode == 0, done.stdout + done.stderr
        assert (report["matching"]["status"], report["matching"]["matched"]) == ("COMPLETE", 1)
        requests = report["requests"]
        # the health check, an http call
        assert (requests["recorded"], requests["served"], requests["sent_live"]) == (1, 1, 0)
        for line in printed.splitlines():  # the recorded answer and request id, read back
            assert line in done.stderr


def test_a_changed_request_body_diverges_at_its_path(
    folder: Path, recorded: dict[str, str], server: LocalOpenAI
) -> None:
    del recorded
    sent = len(server.requests)
    env = _env(server, QUESTION="What is the weather in Rome?")
    done = _replay(folder, env, "http.client.sftrace", "http.client")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert (report["matching"]["status"], report["matching"]["code"]) == ("DIVERGED", "input_diverged")
    assert report["matching"]["diagnostic"]["difference"]["path"] == "$.body.messages[0].content"
    assert len(server.requests) == sent


def test_an_http_client_recording_replays_through_urllib_and_requests(
    folder: Path, recorded: dict[str, str], server: LocalOpenAI
) -> None:
    sent = len(server.requests)
    request_id = next(x for x in recorded["http.client"].splitlines() if x.startswith("request id: "))
    for how in ("urllib", "requests"):
        done = _replay(folder, _env(server), "http.client.sftrace", how)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["matching"]["status"] == "COMPLETE"
        assert request_id in done.stderr  # the http.client run's response, read by the other client
    assert len(server.requests) == sent


def test_a_recorded_connection_error_is_raised_again(
    tmp_path: Path, folder: Path, server: LocalOpenAI
) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = str(closed.getsockname()[1])
    printed = _record(folder, server, "http.client", str(tmp_path / "run.sftrace"), REFUSED_PORT=port)
    assert "refused: ConnectionRefusedError" in printed
    assert _calls(tmp_path / "run.sftrace")[-1][2] == {
        "error_type": "ConnectionRefusedError",
        "message": "[Errno 111] Connection refused",
    }
    done = _replay(folder, _env(server, REFUSED_PORT=port), str(tmp_path / "run.sftrace"), "http.client")
    report = json.loads(done.stdout)
    assert report["matching"]["status"] == "COMPLETE", done.stdout
    assert (report["requests"]["recorded"], report["requests"]["served"]) == (2, 2)  # health, refused
    assert "refused: ConnectionRefusedError" in done.stderr


def test_a_request_built_by_hand_is_named_in_a_warning(
    tmp_path: Path, folder: Path, server: LocalOpenAI
) -> None:
    bundle = str(tmp_path / "run.sftrace")
    done = _stepfork(folder, _env(server), "record", "-o", bundle, "--", sys.executable, "by_hand.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "health: 200" in done.stdout
    assert "UncapturedRequestWarning: GET /health to 127.0.0.1:" in done.stderr
    assert "not in the bundle" in done.stderr


def test_a_streamed_answer_is_recorded_as_its_events_and_read_back(
    tmp_path: Path, folder: Path, server: LocalOpenAI
) -> None:
    printed = _record(folder, server, "http.client", str(tmp_path / "run.sftrace"), STREAMED="1")
    streamed = next(line for line in printed.splitlines() if line.startswith("streamed: "))
    assert len(streamed) > len("streamed: ")
    kind, _, output = _calls(tmp_path / "run.sftrace")[-1]
    assert kind == "llm_request"
    assert output["sse"]["end"] == "finished"  # a stream is recorded as its events, as httpx records it
    sent = len(server.requests)
    done = _replay(folder, _env(server, STREAMED="1"), str(tmp_path / "run.sftrace"), "http.client")
    assert json.loads(done.stdout)["matching"]["status"] == "COMPLETE", done.stdout
    assert streamed in done.stderr
    assert len(server.requests) == sent
