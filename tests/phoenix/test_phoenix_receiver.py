"""``stepfork export --otlp-endpoint`` to a real Arize Phoenix started on 127.0.0.1 (issue 15).

Phoenix is heavy, so it lives in its own hatch environment (``hatch run phoenix:test``, run by .ci/run);
the main test environment has no Phoenix and leaves this folder out (conftest.py). The spans are
read back from Phoenix's REST API with their names, parents and ``stepfork.*`` attributes.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 (SQLite in a temporary directory); its base URL."""
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (work / "phoenix.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:  # readiness: Phoenix answers /healthz once it serves
            if server.poll() is not None:
                pytest.fail(f"Phoenix exited: {(work / 'phoenix.log').read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("Phoenix did not start within 120 s")
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _stepfork(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "stepfork"
    return subprocess.run(
        [str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize("convention", ["openinference", "genai"])
def test_a_replay_exported_to_phoenix_reads_back(phoenix: str, convention: str, tmp_path: Path) -> None:
    work = tmp_path / "q"
    shutil.copytree(REPO / "examples" / "quickstart", work)
    project = f"stepfork-{convention}"
    os.environ["OTEL_RESOURCE_ATTRIBUTES"] = f"openinference.project.name={project}"
    try:
        done = _stepfork(
            "export",
            "notify.sftrace",
            "--otlp-endpoint",
            f"{phoenix}/v1/traces",
            "--convention",
            convention,
            "--entrypoint",
            "quickstart:run_agent_fixed",
            cwd=work,
        )
    finally:
        del os.environ["OTEL_RESOURCE_ATTRIBUTES"]
    assert done.returncode == 0, done.stdout + done.stderr
    spans: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(spans) < 3 and time.monotonic() < deadline:  # Phoenix ingests asynchronously
        try:
            spans = _get(f"{phoenix}/v1/projects/{project}/spans?limit=100")["data"]
        except OSError:
            spans = []
        if len(spans) < 3:
            time.sleep(0.5)
    by_kind = {
        s["attributes"]["stepfork.kind"]: s for s in spans if s["attributes"]["stepfork.kind"] != "tool"
    }
    root = by_kind["run"]
    assert root["parent_id"] is None
    assert root["name"] == ("notify-agent" if convention == "openinference" else "invoke_agent notify-agent")
    assert root["attributes"]["stepfork.replay.mode"] == "frozen"
    assert len(root["attributes"]["stepfork.replay.of_trace_id"]) == 32
    assert root["attributes"]["stepfork.replay.matching"] == "COMPLETE"
    assert root["attributes"]["stepfork.replay.behavior"] == "DIVERGED"  # the fixed code behaves differently
    calls = [s for s in spans if s is not root]
    assert len(calls) == 2
    assert all(s["parent_id"] == root["context"]["span_id"] for s in calls)
    assert {s["attributes"]["stepfork.replay.action"] for s in calls} == {"substituted"}
    llm = by_kind["llm"]
    assert llm["name"] == ("LLM" if convention == "openinference" else "chat local-notify-1")
    assert (
        json.loads(llm["attributes"]["stepfork.input"])["messages"][1]["content"]
        == "Order ORD-1001 status: shipped"
    )
