"""A background poller (NEWCOMER finding 9): a thread started without the agent's context repeats the same
GET on a timer (a feature-flag poller, a health check, as SDKs run them). A replay answers faster than the
server did, so the thread polls more often than it did while recorded; every replay was DIVERGED
("not this often"). Now a background request that repeats a recorded one after every recorded copy was
served gets the last recorded answer again and is counted as a repeat; the agent's own requests stay
strict. The real ``stepfork`` CLI (``record --``/``replay --``), ``requests`` against the local
OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py), whose counter proves nothing was sent.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import LocalOpenAI, serving

STEPFORK = Path(sys.executable).parent / "stepfork"

SCRIPT = """
import json, os, threading, time
import requests

BASE = os.environ["OPENAI_BASE_URL"]


def poll():
    while True:
        try:
            requests.get(BASE + "/health", timeout=1)  # a feature-flag poller, as SDKs run them
        except Exception:
            pass
        time.sleep(0.02)


threading.Thread(target=poll, daemon=True).start()
body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
answer = requests.post(BASE + "/chat/completions", json=body, timeout=5).json()
for _ in range(int(os.environ.get("OWN_CHECKS", "1"))):  # the agent's own health check, in its context
    requests.get(BASE + "/models", timeout=5)
time.sleep(float(os.environ.get("LINGER", "0.3")))  # the rest of the run: the poller keeps polling
print(json.dumps({"answer": answer["choices"][0]["message"]["content"]}))
"""


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def stepfork(folder: Path, server: LocalOpenAI, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "OPENAI_BASE_URL": server.base_url, "NO_COLOR": "1", **env}
    return subprocess.run(
        [str(STEPFORK), *args], cwd=folder, env=environment, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def recorded(tmp_path: Path, server: LocalOpenAI) -> Path:
    (tmp_path / "poller.py").write_text(SCRIPT)
    done = stepfork(tmp_path, server, "record", "-o", "run.sftrace", "--", "python", "poller.py")
    assert done.returncode == 0, done.stderr
    return tmp_path


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_every_replay_of_a_polling_program_matches_and_counts_the_extra_rounds_as_repeats(
    recorded: Path, server: LocalOpenAI
) -> None:
    sent = len(server.requests)
    for _ in range(10):
        done = stepfork(recorded, server, "replay", "run.sftrace", "--json", "--", "python", "poller.py")
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert report["matching"]["status"] == "COMPLETE", report["matching"]
        assert all(item["background"] for item in report["requests"]["items"] if item["action"] == "repeated")
    assert len(server.requests) == sent  # 0 requests reached the server

    # a run that lasts longer than the recorded one (a slower machine): the poller surely polls more often
    text = stepfork(recorded, server, "replay", "run.sftrace", "--", "python", "poller.py", LINGER="0.8")
    assert text.returncode == 0, text.stdout + text.stderr
    line = next(line for line in text.stdout.splitlines() if line.startswith("  HTTP requests:"))
    assert re.search(r"served \(of \d+ recorded\): .*, \d+ repeats?$", line), line
    assert len(server.requests) == sent


def test_the_agents_own_request_made_more_often_than_recorded_still_diverges(
    recorded: Path, server: LocalOpenAI
) -> None:
    command = ("replay", "run.sftrace", "--json", "--", "python", "poller.py")
    done = stepfork(recorded, server, *command, OWN_CHECKS="2")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["matching"]["code"] == "request_not_recorded"
    assert "/models from the agent" in report["matching"]["message"]
