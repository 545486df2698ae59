"""Issue 28, "Done when": a recording made with one pydantic-ai/openai release's message shapes, diffed
against a recording made now, is EQUIVALENT, and replays MATCHED (data/PROVENANCE.md: pydantic-ai-slim
2.68.0 and openai 3.50.0; 2.78 added ``duration``, ``request_timestamp``, ``ui_visibility`` and
``durable``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
EXAMPLES = HERE.parents[1] / "examples"


def record(script: str, args: list[str], cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, *(["-c", script] if script else []), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    for source in (
        HERE / "helpers" / "pydantic_ai_agents.py",
        HERE / "helpers" / "fake_providers.py",
        EXAMPLES / "pydantic_ai_weather" / "weather_agent.py",
    ):
        shutil.copy2(source, tmp_path / source.name)
    return tmp_path


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_an_older_pydantic_ai_openai_recording_is_equivalent_to_one_made_now(agents: Path) -> None:
    import pydantic_ai

    assert pydantic_ai.__version__ != "2.68.0"  # otherwise nothing is upgraded here
    record("", ["pydantic_ai_agents.py", "record", "now.sftrace"], agents)
    old = DATA / "pydantic-ai-2.68-openai.sftrace"
    result = diff_traces(old, agents / "now.sftrace")
    assert result.equivalent, str(result)
    shapes = {c.noise for s in result.steps for c in s.ignored}
    assert {"timing", "renamed id"} <= shapes
    assert not diff_traces(old, agents / "now.sftrace", strict=True).equivalent


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_an_older_pydantic_ai_function_model_recording_is_equivalent_and_new_fields_are_noise(
    agents: Path,
) -> None:
    record("import sys, weather_agent as m; m.record_run(sys.argv[1])", ["now.sftrace"], agents)
    result = diff_traces(DATA / "pydantic-ai-2.68-weather.sftrace", agents / "now.sftrace")
    assert result.equivalent, str(result)
    noise = {c.path.rsplit(".", 1)[-1]: c.noise for s in result.steps for c in s.ignored}
    assert noise.get("request_timestamp") in ("timing", "pydantic-ai-message")
    assert noise.get("ui_visibility") == "new field"


def test_the_older_recording_replays_matched_on_the_installed_release(agents: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(agents))
    import pydantic_ai_agents

    outcome = replay_entrypoint(DATA / "pydantic-ai-2.68-openai.sftrace", pydantic_ai_agents.run_agent)
    assert outcome.exit_code == 0, outcome.matching.message
    assert outcome.behavior.status == "MATCHED", outcome.behavior.message
    assert {d.noise for d in outcome.behavior.ignored} >= {"timing"}
