"""MCP through the real CLI (issue 29): examples/mcp_agent recorded with one line (``instrument_mcp``) and
with none (``stepfork record -- python mcp_script.py``), over stdio and streamable HTTP; replayed with the
server never started, exported and run. Each step is the real command in a subprocess, in a copy of the
example (the tree is never touched)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_support import http_server, tool_calls

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_agent"
STEPFORK = Path(sys.executable).parent / "stepfork"
NAMES = [
    "mcp/initialize",
    "weather/tools/list",
    "weather/get_forecast",
    "weather/resources/read",
    "weather/prompts/get",
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for source in EXAMPLE.glob("*.py"):
        shutil.copy2(source, tmp_path / source.name)
    return tmp_path


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("WEATHER_")}
    environment["WEATHER_PID_FILE"] = str(cwd / "server.pid")
    environment.update(env)
    return subprocess.run(
        args, cwd=cwd, env=environment, capture_output=True, text=True, check=False, timeout=300
    )


def stepfork(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    done = run([str(STEPFORK), *args], cwd, **env)
    return done


def started(folder: Path) -> bool:
    """True when the stdio server was started since the last call (its pid file is consumed)."""
    pid = folder / "server.pid"
    found = pid.exists()
    pid.unlink(missing_ok=True)
    return found


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_one_line_records_the_example_and_its_replay_and_exported_test_never_start_the_server(
    folder: Path,
) -> None:
    recorded = run([sys.executable, "mcp_agent.py", "record", "run.sftrace"], folder)
    assert recorded.returncode == 0, recorded.stderr
    assert started(folder)
    assert tool_calls(folder / "run.sftrace") == NAMES
    (folder / "expected.json").write_text(recorded.stdout)
    replayed = stepfork(["replay", "run.sftrace", "--entrypoint", "mcp_agent:run_agent"], folder)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "Recorded behavior: MATCHED" in replayed.stdout
    assert replayed.stdout.count("(substituted)") == 7
    assert not started(folder)
    exported = stepfork(
        [
            *("export", "run.sftrace", "--pytest", "--entrypoint", "mcp_agent:run_agent"),
            *("--expect-output", "expected.json", "--output", "test_weather.py"),
        ],
        folder,
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    passed = stepfork(["run", "test_weather.py"], folder)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Verdict: PASSED" in passed.stdout
    assert not started(folder)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_zero_code_stdio_records_replays_and_exports_with_the_server_never_started(folder: Path) -> None:
    program = [sys.executable, "mcp_script.py", "Paris"]
    recorded = stepfork(["record", "-o", "run.sftrace", "--", *program], folder)
    assert recorded.returncode == 0, recorded.stderr
    assert started(folder)
    assert tool_calls(folder / "run.sftrace") == NAMES
    replayed = stepfork(["replay", "run.sftrace", "--", *program], folder)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout.splitlines()[0]) == json.loads(recorded.stdout)
    assert replayed.stdout.count("(substituted)") == 7
    assert not started(folder)
    exported = stepfork(["export", "run.sftrace", "-o", "test_weather.py", "--", *program], folder)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    passed = stepfork(["run", "test_weather.py"], folder)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Verdict: PASSED" in passed.stdout
    assert not started(folder)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_zero_code_an_is_error_result_replays_as_recorded(folder: Path) -> None:
    program = [sys.executable, "mcp_script.py", "Atlantis"]
    recorded = stepfork(["record", "-o", "run.sftrace", "--", *program], folder)
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["tool_failed"] is True
    started(folder)
    replayed = stepfork(["replay", "run.sftrace", "--", *program], folder)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout.splitlines()[0]) == json.loads(recorded.stdout)
    assert "Dependency matching: COMPLETE" in replayed.stdout
    assert not started(folder)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_zero_code_streamable_http_replays_with_no_request_to_the_server(folder: Path) -> None:
    program = [sys.executable, "mcp_script.py", "Paris"]
    with http_server(folder) as server:
        url = server.url
        recorded = stepfork(["record", "-o", "run.sftrace", "--", *program], folder, WEATHER_MCP_URL=url)
        assert recorded.returncode == 0, recorded.stderr
        assert tool_calls(folder / "run.sftrace") == NAMES
        before = server.requests()
        assert before > 0
        replayed = stepfork(["replay", "run.sftrace", "--", *program], folder, WEATHER_MCP_URL=server.url)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "Dependency matching: COMPLETE" in replayed.stdout
        assert replayed.stdout.count("(substituted)") == 7  # the HTTP requests were never calls of their own
        assert server.requests() == before


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_changed_advertised_tool_list_is_a_change_at_its_path(folder: Path) -> None:
    program = [sys.executable, "mcp_script.py", "Paris"]
    assert stepfork(["record", "-o", "before.sftrace", "--", *program], folder).returncode == 0
    after = stepfork(["record", "-o", "after.sftrace", "--", *program], folder, WEATHER_UNITS="1")
    assert after.returncode == 0, after.stderr
    diff = stepfork(["diff", "before.sftrace", "after.sftrace"], folder)
    assert diff.returncode == 1, diff.stdout + diff.stderr
    assert "weather/tools/list" in diff.stdout
    assert "output.tools[0].inputSchema.properties.units" in diff.stdout
    # a replay where the server runs (live): the model is offered the new schema and the call diverges there
    live = ["--mode", "live", "--allow-live-tool", "mcp/initialize"]
    live += ["--allow-live-tool", "weather/tools/list"]
    replayed = stepfork(["replay", "before.sftrace", *live, "--", *program], folder, WEATHER_UNITS="1")
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "$.body.tools[0].function.parameters.properties.units" in replayed.stdout
