"""A program that exits while a daemon thread's request still waits for its server (a feature-flag fetch,
a long poll). ``stepfork record --`` could write such a request's call with no outcome when the call began
as the session ended, so strict validation refused the bundle and ``replay`` with it (exit 2; seen 1 run in
4 on a 20 ms poller). Every call now gets its outcome (docs/recording.md, "Calls still running when the run
ends"): the HTTP captures record the response they hold (here ``incomplete``: none came before the end), a
call through ``handle`` ends as ``UnfinishedCallError`` (tests/trace/test_unfinished_calls.py). The bundle
is valid and its replay MATCHED, sending nothing. The real ``stepfork`` CLI and ``urllib`` against a server
on 127.0.0.1 that answers ``/hang`` only when the test ends.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_runs import run_stepfork

PROGRAM = """
import json, os, threading, urllib.request

BASE = os.environ["FLAGS_URL"]


def fetch_flags():  # a library's background fetch, in a daemon thread
    try:
        urllib.request.urlopen(BASE + "/hang", timeout=60).read()
    except Exception:
        pass


threading.Thread(target=fetch_flags, daemon=True).start()
with urllib.request.urlopen(BASE + "/arrived", timeout=30) as response:  # the agent's own request
    print(json.dumps({"answer": json.load(response)}))
"""


class Flags(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.paths: list[str] = []
        self.hanging = threading.Event()  # a /hang request is waiting
        self.release = threading.Event()  # the test ends: /hang may answer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Flags

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        if self.path == "/hang":
            self.server.hanging.set()
            self.server.release.wait(60)
        else:  # /arrived answers once the background request is surely in flight
            self.server.hanging.wait(30)
        body = json.dumps({"path": self.path, "ok": True}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Flags]:
    running = Flags()
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.release.set()
        running.shutdown()
        running.server_close()


def stepfork(folder: Path, server: Flags, *args: str) -> subprocess.CompletedProcess[str]:
    return run_stepfork(folder, *args, FLAGS_URL=server.url)


def test_a_request_in_flight_at_exit_leaves_a_valid_bundle_that_replays_matched(
    tmp_path: Path, server: Flags
) -> None:
    (tmp_path / "agent.py").write_text(PROGRAM)
    done = stepfork(tmp_path, server, "record", "-o", "run.sftrace", "--", "python", "agent.py")
    assert done.returncode == 0, done.stderr
    assert sorted(server.paths) == ["/arrived", "/hang"]

    checked = stepfork(tmp_path, server, "validate", "run.sftrace", "--verify-integrity")  # strict
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = (tmp_path / "run.sftrace" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert events[-1]["type"] == "run_end"
    hang = next(e for e in events if e["type"] == "tool_call" and e["name"].endswith("/hang"))
    (outcome,) = [e for e in events if e["parent_id"] == hang["id"] and e["type"] == "tool_result"]
    assert outcome["output"]["incomplete"] == "the session ended before the response"  # the capture's form

    sent = len(server.paths)
    replayed = stepfork(tmp_path, server, "replay", "run.sftrace", "--json", "--", "python", "agent.py")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    report = json.loads(replayed.stdout)
    assert report["matching"]["status"] == "COMPLETE", report["matching"]
    assert len(server.paths) == sent  # nothing reached the server


LATE = """
import json, os, threading, urllib.request

BASE = os.environ["FLAGS_URL"]
ready = threading.Event()


def report():  # a non-daemon thread that sends its report after the script's last line
    ready.wait()
    urllib.request.urlopen(BASE + "/report", timeout=30).read()


threading.Thread(target=report).start()
with urllib.request.urlopen(BASE + "/hello", timeout=30) as response:
    print(json.dumps(json.load(response)))
ready.set()  # the script ends here; the interpreter joins the thread before the program exits
"""


def test_a_request_a_thread_sends_after_the_scripts_last_line_is_part_of_the_run(
    tmp_path: Path, server: Flags
) -> None:
    """NEWCOMER6 F4: the recording ended with the script, before the interpreter joined the thread, so the
    bundle lacked the thread's request, while a replay waits for the thread: every replay of unchanged code
    was DIVERGED (the request refused as not recorded) and its exported test FAILED."""
    server.hanging.set()  # /hello answers at once
    (tmp_path / "late.py").write_text(LATE)
    done = stepfork(tmp_path, server, "record", "-o", "late.sftrace", "--", "python", "late.py")
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "late.sftrace" / "events.jsonl").read_text().splitlines()
    names = [json.loads(line).get("name") for line in lines]
    assert any(name and name.endswith("/report") for name in names), names
    sent = len(server.paths)
    for _ in range(2):
        replayed = stepfork(tmp_path, server, "replay", "late.sftrace", "--json", "--", "python", "late.py")
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert json.loads(replayed.stdout)["matching"]["status"] == "COMPLETE"
    assert len(server.paths) == sent  # nothing reached the server
