"""Two recordings of the same polling program diff EQUIVALENT (docs/diff.md, "Calls on their own clock").

A thread without the agent's context polls on its own clock, so the number of rounds differs from run to
run, and the run may end while a round waits: `stepfork diff` said BEHAVIOR CHANGED (a `GET /health`
removed) for two recordings of unchanged code, as replay once said DIVERGED. The extra rounds of a request
both runs made, and a round a run ended during, are not compared (counted on the report); a background
request only one run made, and the agent's own requests, still count. The real CLI against the local
OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py: fresh ids, times and headers per response).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runs import run_stepfork
from local_openai import LocalOpenAI, serving

# The number of rounds stands for the poller's timing: the same code, another run.
SCRIPT = """
import json, os, threading, time
import requests

BASE = os.environ["OPENAI_BASE_URL"]
done = threading.Event()


def poll():  # a feature-flag poller, started without the agent's context, as libraries start theirs
    for _ in range(int(os.environ["ROUNDS"])):
        requests.get(BASE + os.environ.get("POLL_PATH", "/health"), timeout=5)
    done.set()
    if os.environ.get("HANG"):  # a long poll, still waiting for its answer when the program exits
        requests.get(BASE + "/long-poll", params={"touch": os.environ["HANG"]}, timeout=60)


threading.Thread(target=poll, daemon=True).start()
body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
answer = requests.post(BASE + "/chat/completions", json=body, timeout=5).json()
for _ in range(int(os.environ.get("OWN_CHECKS", "1"))):  # the agent's own check, in its context
    requests.get(BASE + "/models", timeout=5)
done.wait()
while os.environ.get("HANG") and not os.path.exists(os.environ["HANG"]):
    time.sleep(0.005)  # until the server has the long poll: it is in flight when the program exits
print(json.dumps({"answer": answer["choices"][0]["message"]["content"]}))
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, server: LocalOpenAI) -> Path:
    here = tmp_path_factory.mktemp("poller")
    (here / "poller.py").write_text(SCRIPT)
    for name, env in {
        "two": {"ROUNDS": "2"},
        "five": {"ROUNDS": "5", "HANG": str(here / "long-poll.seen")},
        "other": {"ROUNDS": "2", "POLL_PATH": "/models"},
        "own": {"ROUNDS": "2", "OWN_CHECKS": "2"},
    }.items():
        done = stepfork(here, server, "record", "-o", f"{name}.sftrace", "--", "python", "poller.py", **env)
        assert done.returncode == 0, done.stderr
    return here


def stepfork(folder: Path, server: LocalOpenAI, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_stepfork(folder, *args, OPENAI_BASE_URL=server.base_url, **env)


def test_a_pollers_other_number_of_rounds_is_no_change(folder: Path, server: LocalOpenAI) -> None:
    done = stepfork(folder, server, "diff", "two.sftrace", "five.sftrace")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Result: BEHAVIOR EQUIVALENT" in done.stdout
    assert "Not compared: 4 call(s) on their own clock" in done.stdout  # 3 extra + the one cut short
    lines = (folder / "five.sftrace" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    (poll,) = [e for e in events if e["type"] == "tool_call" and "/long-poll" in e["name"]]
    (ended,) = [e for e in events if e["parent_id"] == poll["id"]]
    assert "incomplete" in ended["output"]  # the round the run ended during
    report = json.loads(stepfork(folder, server, "diff", "five.sftrace", "two.sftrace", "--json").stdout)
    assert report["equivalent"] is True
    assert report["counts"]["not_compared"] == 4


def test_every_round_counts_under_strict(folder: Path, server: LocalOpenAI) -> None:
    done = stepfork(folder, server, "diff", "two.sftrace", "five.sftrace", "--strict")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Not compared" not in done.stdout


def test_a_background_request_only_one_run_made_is_a_change(folder: Path, server: LocalOpenAI) -> None:
    done = stepfork(folder, server, "diff", "two.sftrace", "other.sftrace")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "/v1/models" in done.stdout
    assert "added" in done.stdout
    assert "/v1/health (step" in done.stdout
    assert "removed" in done.stdout


def test_the_agents_own_extra_request_is_a_change(folder: Path, server: LocalOpenAI) -> None:
    done = stepfork(folder, server, "diff", "two.sftrace", "own.sftrace")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Result: BEHAVIOR CHANGED" in done.stdout
