"""``stepfork record -- python script.py`` stopped by a signal (issue 11 break-it review), real CLI.

``kill PID`` of ``stepfork record`` (what a CI timeout or ``docker stop`` sends) used to kill only the
``stepfork`` process: the program went on running, orphaned, still recording, and the command exited
with Python's -15 (status 241). Now the signal reaches the program, whose recording ends as a failed run
with a valid bundle, and the command exits 128 + 15, the shell's status.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from stepfork.trace import validate_bundle

STEPFORK = Path(sys.executable).parent / "stepfork"

SCRIPT = """
import sys, time
import httpx2

def answer(request):
    return httpx2.Response(200, json={"id": "chatcmpl-1", "object": "chat.completion", "choices": []})

client = httpx2.Client(transport=httpx2.MockTransport(answer))
client.post("https://api.openai.com/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": []})
print("ready", flush=True)
for _ in range(600):  # a long agent step; the test stops it long before
    time.sleep(0.1)
print("not stopped", flush=True)
"""


@pytest.mark.slow  # two interpreters started through the real CLI: `hatch run slow:test` (tests/conftest.py)
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_terminating_stepfork_record_stops_the_program_and_ends_its_recording(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(SCRIPT)
    bundle = tmp_path / "run.sftrace"
    command = [str(STEPFORK), "record", "-o", str(bundle), "--", sys.executable, "agent.py"]
    with subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, text=True) as stepfork:
        assert stepfork.stdout is not None
        assert stepfork.stdout.readline() == "ready\n"  # the program's first call is recorded
        stepfork.send_signal(signal.SIGTERM)  # to `stepfork record` only, as `kill PID` does
        rest, _ = stepfork.communicate(timeout=30)
    assert "not stopped" not in rest
    assert stepfork.returncode == 128 + signal.SIGTERM
    report = validate_bundle(bundle)
    assert report.valid, report
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert manifest["totals"]["llm_calls"] == 1
