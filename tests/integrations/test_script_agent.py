"""Zero-code recording and replay of a script agent (issue 11): ``stepfork record -- python script`` and
``stepfork replay BUNDLE -- python script``, through the real CLI, on examples/script_agent (no Stepfork
import in it) talking HTTP to a fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "script_agent"
STEPFORK = Path(sys.executable).parent / "stepfork"
sys.path.insert(0, str(EXAMPLE))

from fake_server import serve  # noqa: E402

from stepfork.analysis.export import read_exported_constants  # noqa: E402
from stepfork.cli.scriptrun import run_script_regression_case  # noqa: E402


@pytest.fixture
def server() -> Iterator[Any]:
    srv, fake = serve()
    yield srv, fake
    srv.shutdown()
    srv.server_close()


def run(args: list[str], cwd: Path, port: int) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "sk-script-secret",
    }
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


@pytest.mark.slow  # long end-to-end story: `hatch run slow:test` (tests/conftest.py)
def test_record_then_replay_a_script_with_no_stepfork_import(tmp_path: Path, server: Any) -> None:
    srv, fake = server
    port = srv.server_address[1]
    shutil.copy2(EXAMPLE / "weather_script.py", tmp_path)
    assert "stepfork" not in (tmp_path / "weather_script.py").read_text().lower().split('"""', 2)[2]
    recorded = run(
        ["record", "-o", "run.sftrace", "--", sys.executable, "weather_script.py", "Paris"], tmp_path, port
    )
    assert recorded.returncode == 0, recorded.stderr
    answer = json.loads(recorded.stdout)  # the program's stdout passes through
    assert answer["answer"] == fake.answer
    assert len(fake.requests) == 2
    events = [
        json.loads(line) for line in (tmp_path / "run.sftrace" / "events.jsonl").read_text().splitlines()
    ]
    assert [e["type"] for e in events if e["type"].startswith("llm_")] == ["llm_request", "llm_response"] * 2
    assert "sk-script-secret" not in (tmp_path / "run.sftrace" / "events.jsonl").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sftrace", "weather_script.py"]

    replayed = run(
        ["replay", "run.sftrace", "--", sys.executable, "weather_script.py", "Paris"], tmp_path, port
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout.splitlines()[0]) == answer
    assert replayed.stdout.count("(substituted)") == 2
    assert "Status: COMPLETED" in replayed.stdout
    assert len(fake.requests) == 2  # served from the bundle

    changed = run(
        ["replay", "run.sftrace", "--", sys.executable, "weather_script.py", "Lyon"], tmp_path, port
    )
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "$.body.messages[1].content" in changed.stdout
    assert len(fake.requests) == 2
    assert "recorded input fingerprint: " in changed.stdout
    assert "…" in changed.stdout  # abbreviated
    lyon = [sys.executable, "weather_script.py", "Lyon"]
    verbose = run(["replay", "run.sftrace", "--verbose", "--", *lyon], tmp_path, port)
    fingerprints = r"recorded input fingerprint: [0-9a-f]{64}\n +actual input fingerprint: +[0-9a-f]{64}"
    full = re.search(fingerprints, verbose.stdout)
    assert full, verbose.stdout
    ignoring = run(
        [
            "replay",
            "run.sftrace",
            "--ignore",
            "127.0.0.1/gpt-4o-mini:$.body.messages[1].content",
            "--",
            sys.executable,
            "weather_script.py",
            "Lyon",
        ],
        tmp_path,
        port,
    )
    assert "ignored: call #1 127.0.0.1/gpt-4o-mini" in ignoring.stdout, ignoring.stdout + ignoring.stderr
    assert len(fake.requests) == 2


def test_the_exit_status_is_the_run_status(tmp_path: Path, server: Any) -> None:
    srv, _ = server
    (tmp_path / "fails.py").write_text("import sys\nprint('working')\nsys.exit(3)\n")
    done = run(
        ["record", "-o", "f.sftrace", "--", sys.executable, "fails.py"], tmp_path, srv.server_address[1]
    )
    assert (done.returncode, done.stdout) == (3, "working\n")
    manifest = json.loads((tmp_path / "f.sftrace" / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    again = run(
        ["record", "-o", "f.sftrace", "--", sys.executable, "fails.py"], tmp_path, srv.server_address[1]
    )
    assert again.returncode == 2
    assert "--overwrite" in again.stderr


def test_record_refuses_a_command_that_is_not_python(tmp_path: Path) -> None:
    done = run(["record", "--", "bash", "-c", "true"], tmp_path, 1)
    assert done.returncode == 2
    assert "python" in done.stderr


@pytest.mark.slow  # long end-to-end story: `hatch run slow:test` (tests/conftest.py)
def test_export_of_a_script_writes_a_test_that_replays_it(tmp_path: Path, server: Any) -> None:
    srv, fake = server
    port = srv.server_address[1]
    shutil.copy2(EXAMPLE / "weather_script.py", tmp_path)
    program = [sys.executable, "weather_script.py", "Paris"]
    assert run(["record", "-o", "run.sftrace", "--", *program], tmp_path, port).returncode == 0
    exported = run(["export", "run.sftrace", "-o", "test_weather.py", "--", *program], tmp_path, port)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "Command:    " in exported.stdout
    constants = read_exported_constants((tmp_path / "test_weather.py").read_text())
    assert (constants["COMMAND"], constants["ENTRYPOINT"]) == (program, None)  # as typed, literals

    passed = run(["run", "test_weather.py"], tmp_path, port)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Verdict: PASSED" in passed.stdout
    assert len(fake.requests) == 2  # the program's requests were served from the bundle

    script = tmp_path / "weather_script.py"  # a regression: the prompt changed; the test's body fails
    script.write_text(script.read_text().replace("Should I take an umbrella", "Do I need an umbrella"))
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "sk-script-secret"}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        with pytest.raises(AssertionError, match=r"failed \(exit 1\)"):
            run_script_regression_case(trace_path=tmp_path / "run.sftrace", command=program, cwd=tmp_path)
    assert len(fake.requests) == 2

    refused = run(
        ["export", "run.sftrace", "-o", "t2.py", "--raise-as", "a.B=a:B", "--", *program], tmp_path, port
    )
    assert (refused.returncode, refused.stderr.count("\n")) == (2, 1)
    assert "--raise-as is not supported with `-- python SCRIPT`" in refused.stderr


def test_the_documented_export_of_a_program_with_its_expectation_passes(tmp_path: Path, server: Any) -> None:
    # docs/cli.md, "Exporting a program", followed as written (NEWCOMER3 finding 12: its expected.json was
    # not shipped and did not hold what the program prints, so the documented PASSED was a FAILED)
    srv, fake = server
    port = srv.server_address[1]
    documented = (EXAMPLE.parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    echoed = re.search(r"^\$ echo '(.+)' > expected\.json", documented, re.MULTILINE)
    assert echoed is not None, "the expected.json step of docs/cli.md"
    (tmp_path / "expected.json").write_text(echoed.group(1) + "\n", encoding="utf-8")
    shutil.copy2(EXAMPLE / "weather_script.py", tmp_path)
    program = [sys.executable, "weather_script.py", "Paris"]
    assert run(["record", "-o", "weather.sftrace", "--", *program], tmp_path, port).returncode == 0
    options = ["-o", "test_weather.py", "--expect-output", "expected.json"]
    exported = run(["export", "weather.sftrace", *options, "--", *program], tmp_path, port)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert f"Expectation: {echoed.group(1)}" in exported.stdout
    passed = run(["run", "test_weather.py"], tmp_path, port)
    assert "Verdict: PASSED" in passed.stdout, passed.stdout + passed.stderr
    assert passed.returncode == 0
    assert len(fake.requests) == 2  # recorded once; the test's replay sent nothing
