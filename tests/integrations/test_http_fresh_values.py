"""A fresh value in a request outside the agent's order (NEWCOMER6 F2, F3): an agent's REST call whose body
or query carries a value the run makes anew (an idempotency key ``str(uuid4())``, ``datetime.now(utc)
.isoformat()``, ``int(time.time() * 1000)``, ``time.time()``, ``?since=<int(time.time())>``) was refused in
every replay of unchanged code ("HTTP request not in the recording ... with another query or body"): the
pool of recorded ``http`` calls matched exact bytes only. A background poller whose request carries the
clock was DIVERGED every time too (its "repeated" rule needed byte-identical requests), and ``diff`` read a
float ``time.time()`` as CHANGED when the provider's ``created`` second fell in the same second.

Now the pool matches a request up to the session's one renaming of fresh values, as the agent's own calls
are matched; a body that changed in anything else (an amount, a constant order id) is still refused. The
real ``stepfork`` CLI (``record --``, ``replay --``, ``diff``), the ``openai`` SDK and ``requests`` against
the local OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py), whose counter proves a replay
sent nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_openai import LocalOpenAI, serving

STEPFORK = Path(sys.executable).parent / "stepfork"

AUDIT = """
import datetime, os, threading, time, uuid
import requests
from openai import OpenAI

client = OpenAI()
BASE = os.environ["OPENAI_BASE_URL"].removesuffix("/v1")
answer = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}]
)


def audit():
    event = {
        "event": "answered",
        "order": os.environ.get("ORDER", "ord_7f3a9c2e"),
        "amount": int(os.environ.get("AMOUNT", "120")),
        "idempotency_key": str(uuid.uuid4()),
        "at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "at_ms": int(time.time() * 1000),
        "ts": time.time(),
    }
    requests.post(f"{BASE}/audit", json=event, timeout=5)
    if os.environ.get("SINCE", "1") == "1":  # the clock's second in a query
        requests.get(f"{BASE}/flags", params={"since": int(time.time())}, timeout=5)


if os.environ.get("WHO") == "thread":  # a joined plain thread: without the agent's context
    worker = threading.Thread(target=audit)
    worker.start()
    worker.join()
else:
    audit()
print(answer.choices[0].message.content)
"""

POLLER = """
import os, random, threading, time
import requests
from openai import OpenAI

BASE = os.environ["OPENAI_BASE_URL"].removesuffix("/v1")
STYLE = os.environ["STYLE"]


def poll():  # a feature-flag poller or a heartbeat, as SDKs run them; never stopped
    session = requests.Session()
    while True:
        if STYLE == "since":
            session.get(f"{BASE}/flags", params={"since": int(time.time())}, timeout=5)
        else:
            beat = {"pid": os.environ.get("PID", "worker-1"), "ts": time.time()}
            session.post(f"{BASE}/heartbeat", json=beat, timeout=5)
        time.sleep(0.02 * random.uniform(0.5, 1.5))


threading.Thread(target=poll, daemon=True, name="flag-poller").start()
client = OpenAI()
first = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}]
)
time.sleep(0.3)  # the rest of the run: the poller keeps polling
second = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "And in Rome?"}]
)
print(second.choices[0].message.content)
"""

FRESH = {"$.body.idempotency_key", "$.body.at", "$.body.at_ms", "$.body.ts", "$.url"}
"""Where the audit program's requests carry fresh values: a uuid4 key, an ISO time, epoch ms and seconds,
and ``?since=`` in the URL."""


@pytest.fixture(scope="module")
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def stepfork(folder: Path, server: LocalOpenAI, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test-" + "x" * 40,
        "NO_COLOR": "1",
        **env,
    }
    return subprocess.run(
        [str(STEPFORK), *args], cwd=folder, env=environment, capture_output=True, text=True, timeout=300
    )


def replay(folder: Path, server: LocalOpenAI, bundle: str, program: str, **env: str) -> dict[str, Any]:
    """The ``--json`` report of ``stepfork replay BUNDLE -- python PROGRAM``; asserts that no request
    reached the server."""
    sent = len(server.requests)
    done = stepfork(folder, server, "replay", bundle, "--json", "--", "python", program, **env)
    assert len(server.requests) == sent, "a replay sent a request"
    assert done.stdout, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == (0 if report["matching"]["status"] == "COMPLETE" else 1), done.stderr
    return report


def matched(report: dict[str, Any]) -> bool:
    """True when every call was served and the program completed (a script's printed output is no return
    value: its behavior is ``NOT RECORDED``)."""
    return (report["matching"]["status"], report["execution"]["status"]) == ("COMPLETE", "COMPLETED")


def diff(folder: Path, server: LocalOpenAI, baseline: str, candidate: str) -> str:
    done = stepfork(folder, server, "diff", baseline, candidate)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def audits(tmp_path_factory: pytest.TempPathFactory, server: LocalOpenAI) -> Path:
    """A recording of the audit program (``a.sftrace``), one whose requests are sent from a joined thread
    (``thread.sftrace``), and two without its ``?since=`` request (``one.sftrace``, ``two.sftrace``)."""
    folder = tmp_path_factory.mktemp("audits")
    (folder / "audit.py").write_text(AUDIT)
    runs = (("a", {}), ("thread", {"WHO": "thread"}), ("one", {"SINCE": "0"}), ("two", {"SINCE": "0"}))
    for name, env in runs:
        done = stepfork(folder, server, "record", "-o", f"{name}.sftrace", "--", "python", "audit.py", **env)
        assert done.returncode == 0, done.stdout + done.stderr
    return folder


def test_fresh_values_in_rest_requests_replay(audits: Path, server: LocalOpenAI) -> None:
    report = replay(audits, server, "a.sftrace", "audit.py")
    assert matched(report), report["matching"]
    served = [(item["label"].split("/")[-1], item["action"]) for item in report["requests"]["items"]]
    assert served == [("audit", "substituted"), ("flags", "substituted")], served
    renamed = {item["path"] for item in report["ignored"] if item["reason"] == "renamed id"}
    assert renamed == FRESH, report["ignored"]


def test_recordings_differing_in_fresh_values_only_are_equivalent(audits: Path, server: LocalOpenAI) -> None:
    # a float time.time() too (it read as CHANGED). Without ?since=: diff pairs the model responses'
    # `created` seconds, so a second the agent read equal to one run's `created` and not the other's is
    # still a change in diff (a known limit: docs/decisions.md)
    shown = diff(audits, server, "one.sftrace", "two.sftrace")
    assert "Result: BEHAVIOR EQUIVALENT" in shown, shown


def test_fresh_values_in_requests_from_a_joined_thread_replay(audits: Path, server: LocalOpenAI) -> None:
    report = replay(audits, server, "thread.sftrace", "audit.py", WHO="thread")
    assert matched(report), report["matching"]
    assert {item["background"] for item in report["requests"]["items"]} == {True}


@pytest.mark.parametrize(("changed", "value"), [("AMOUNT", "125"), ("ORDER", "ord_7f3a9c2f")])
def test_a_request_changed_in_another_value_is_still_refused_and_changed(
    audits: Path, server: LocalOpenAI, changed: str, value: str
) -> None:
    report = replay(audits, server, "a.sftrace", "audit.py", **{changed: value})
    assert (report["matching"]["status"], report["matching"]["code"]) == ("DIVERGED", "request_not_recorded")
    assert "POST http://127.0.0.1" in report["matching"]["message"], report["matching"]
    command = ("record", "-o", f"{changed}.sftrace", "--", "python", "audit.py")
    done = stepfork(audits, server, *command, **{changed: value})
    assert done.returncode == 0, done.stdout + done.stderr
    shown = diff(audits, server, "a.sftrace", f"{changed}.sftrace")
    assert "Result: BEHAVIOR CHANGED" in shown, shown
    assert ("input.body.amount" if changed == "AMOUNT" else "input.body.order") in shown, shown


@pytest.fixture(scope="module")
def pollers(tmp_path_factory: pytest.TempPathFactory, server: LocalOpenAI) -> Path:
    """A recording of the poller per style (``heartbeat.sftrace``, ``since.sftrace``)."""
    folder = tmp_path_factory.mktemp("pollers")
    (folder / "poller.py").write_text(POLLER)
    for style in ("heartbeat", "since"):
        done = stepfork(
            folder, server, "record", "-o", f"{style}.sftrace", "--", "python", "poller.py", STYLE=style
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return folder


@pytest.mark.parametrize("style", ["heartbeat", "since"])
def test_a_poller_whose_request_carries_the_clock_replays(
    pollers: Path, server: LocalOpenAI, style: str
) -> None:
    report = replay(pollers, server, f"{style}.sftrace", "poller.py", STYLE=style)
    assert matched(report), report["matching"]
    actions = {item["action"] for item in report["requests"]["items"]}
    assert actions <= {"substituted", "repeated"}, actions


@pytest.mark.slow  # ten replays per style: `hatch run slow:test`
@pytest.mark.parametrize("style", ["heartbeat", "since"])
def test_every_replay_of_a_poller_with_the_clock_matches(
    pollers: Path, server: LocalOpenAI, style: str
) -> None:
    reports = [replay(pollers, server, f"{style}.sftrace", "poller.py", STYLE=style) for _ in range(10)]
    assert [matched(report) for report in reports] == [True] * 10, [r["matching"] for r in reports]


def test_a_poller_whose_request_changed_in_another_value_diverges(pollers: Path, server: LocalOpenAI) -> None:
    report = replay(pollers, server, "heartbeat.sftrace", "poller.py", STYLE="heartbeat", PID="worker-2")
    assert (report["matching"]["status"], report["matching"]["code"]) == ("DIVERGED", "request_not_recorded")
    assert "/heartbeat from a thread without the replay's context" in report["matching"]["message"]
