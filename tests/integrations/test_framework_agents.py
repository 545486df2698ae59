"""Issue 12, "Done when": agents written as the frameworks' docs write them, through the real CLI.

For each agent (pydantic-ai's weather agent, LangGraph's create_react_agent with three tools in one turn,
a LangGraph human-in-the-loop graph with interrupt() resumed by Command(resume=...), an asyncio.gather
fan-out): consecutive `stepfork replay` runs of one unchanged bundle all MATCHED (a few in
CI, 100 with STEPFORK_SOAK=1), the exported test PASSED via `stepfork run`, a changed tool argument reported
at the right call and path, and `diff` of two recordings of the same code equivalent while a changed prompt
is BEHAVIOR CHANGED at its path. The HITL graph's resumed run, recorded on its own with its
Command(resume=...) as the run's input, replays MATCHED and its exported test passes. Each step runs the real
command in a subprocess, in a copy of the example.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEPFORK = Path(sys.executable).parent / "stepfork"
REPLAYS = 100 if os.environ.get("STEPFORK_SOAK") == "1" else 4


@dataclass(frozen=True)
class Agent:
    folder: str
    module: str
    record: str  # python code recording into sys.argv[1] with the prompt in sys.argv[2] ("" = default)
    edit: tuple[str, str]  # a source change that changes one tool argument
    changed_call: str  # the call the changed argument is reported at
    changed_path: str  # and its path
    prompt: str  # another prompt, for the diff
    prompt_path: str  # where diff reports it


AGENTS = [
    Agent(
        "pydantic_ai_weather",
        "weather_agent",
        "import sys, weather_agent as m; m.record_run(sys.argv[1], *(sys.argv[2:3] if sys.argv[2] else []))",
        # a pydantic-ai tool's arguments come from the model: an added argument is first seen in the tool
        # schema the next model request sends, so that is the call and path reported
        (
            "location_description: str) -> LatLng:",
            "location_description: str, units: str = 'metric') -> LatLng:",
        ),
        "scripted_model",
        "$.request.tools[0].parameters_json_schema.properties.units",
        "What is the weather like in Paris?",
        "input.request.messages[0].parts[0].content",
    ),
    Agent(
        "langgraph_react",
        "react_agent",
        "import sys, react_agent as m; m.record_run(sys.argv[1], *(sys.argv[2:3] if sys.argv[2] else []))",
        (
            "def find_museum(city: str, day: str) -> str:",
            "def find_museum(city: str, day: str, free: bool = True) -> str:",
        ),
        "find_museum",
        "$.free",
        "Plan my Wednesday in Lyon.",
        "input.request.messages[1].content",  # [0] is the agent's system prompt
    ),
    Agent(
        "langgraph_hitl",
        "hitl_agent",
        "import sys, hitl_agent as m; m.record_run(sys.argv[1], *(sys.argv[2:3] if sys.argv[2] else []))",
        (
            "def book_hotel(hotel_name: str) -> str:",
            "def book_hotel(hotel_name: str, nights: int = 1) -> str:",
        ),
        "book_hotel",
        "$.nights",
        "Book me the Hotel Costes in Paris.",
        "input.request.messages[0].content",
    ),
    Agent(
        "asyncio_fanout",
        "fanout_agent",
        "import sys, fanout_agent as m; m.record_run(sys.argv[1], *(sys.argv[2:3] if sys.argv[2] else []))",
        ("fetch_weather(city) for city in", "fetch_weather(city.upper()) for city in"),
        "fetch_weather",
        "$.city",
        "Compare the weather in two cities for a city break.",
        "input.messages[1].content",  # [0] is the system prompt
    ),
]


FANOUT = AGENTS[-1]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, timeout=300)


def stepfork(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([str(STEPFORK), *args], cwd)


def record(agent: Agent, cwd: Path, bundle: str, prompt: str = "") -> None:
    done = run([sys.executable, "-c", agent.record, bundle, prompt], cwd)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    if not STEPFORK.exists():
        pytest.skip("the stepfork executable is not installed beside this interpreter")
    return tmp_path


def _copy(agent: Agent, workdir: Path) -> None:
    for source in (EXAMPLES / agent.folder).glob("*.py"):
        shutil.copy2(source, workdir / source.name)


@pytest.mark.slow
@pytest.mark.parametrize("agent", AGENTS, ids=[a.folder for a in AGENTS])
def test_unchanged_bundle_replays_matched_every_time_and_its_exported_test_passes(
    agent: Agent, workdir: Path
) -> None:
    _copy(agent, workdir)
    record(agent, workdir, "run.sftrace")
    entry = f"{agent.module}:run_agent"
    for attempt in range(REPLAYS):
        done = stepfork(workdir, "replay", "run.sftrace", "--entrypoint", entry)
        assert done.returncode == 0, f"replay {attempt + 1}/{REPLAYS}:\n{done.stdout}\n{done.stderr}"
        assert "Recorded behavior: MATCHED" in done.stdout
    exported = stepfork(
        workdir, "export", "run.sftrace", "--pytest", "--entrypoint", entry, "--output", "test_reg.py"
    )
    assert exported.returncode == 0, exported.stderr
    assert "ORDERING = 'auto'" in (workdir / "test_reg.py").read_text()
    for _ in range(2):
        ran = stepfork(workdir, "run", "test_reg.py")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "PASSED" in ran.stdout


@pytest.mark.slow
@pytest.mark.parametrize("agent", AGENTS, ids=[a.folder for a in AGENTS])
def test_a_changed_tool_argument_is_reported_at_its_call_and_path(agent: Agent, workdir: Path) -> None:
    _copy(agent, workdir)
    record(agent, workdir, "run.sftrace")
    source = workdir / f"{agent.module}.py"
    old, new = agent.edit
    text = source.read_text()
    assert old in text
    source.write_text(text.replace(old, new))
    done = stepfork(workdir, "replay", "run.sftrace", "--entrypoint", f"{agent.module}:run_agent")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DIVERGED" in done.stdout
    assert agent.changed_call in done.stdout
    assert agent.changed_path in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("agent", AGENTS, ids=[a.folder for a in AGENTS])
def test_diff_says_equivalent_for_the_same_code_and_behavior_changed_for_a_changed_prompt(
    agent: Agent, workdir: Path
) -> None:
    _copy(agent, workdir)
    record(agent, workdir, "a.sftrace")
    record(agent, workdir, "b.sftrace")
    record(agent, workdir, "c.sftrace", agent.prompt)
    same = stepfork(workdir, "diff", "a.sftrace", "b.sftrace")
    assert same.returncode == 0, same.stdout
    assert "Result: BEHAVIOR EQUIVALENT" in same.stdout
    changed = stepfork(workdir, "diff", "a.sftrace", "c.sftrace", "--json")
    assert changed.returncode == 1, changed.stdout
    report = json.loads(changed.stdout)
    assert report["result"] == "behavior_changed"
    paths = [c["path"] for s in report["steps"] for c in s["changes"]]
    assert agent.prompt_path in paths


@pytest.mark.slow
def test_minimize_finds_the_seven_event_reproduction_of_a_failing_fan_out(workdir: Path) -> None:
    agent = FANOUT
    _copy(agent, workdir)
    record(agent, workdir, "failing.sftrace", "Compare the weather in three Nordic capitals.")
    done = stepfork(
        workdir, "minimize", "failing.sftrace", "--entrypoint", "fanout_agent:run_nordic", "--json"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["original_events"] == 11
    assert report["minimized_events"] == 7
    from stepfork.trace import Trace

    kept = [e for e in Trace.load(workdir / report["output"]).events if e.type == "tool_call"]
    assert [e.input for e in kept] == [{"city": "Oslo"}]  # the LLM call plus the one bad tool call


@pytest.mark.slow
def test_diff_aligns_gathered_siblings_by_identity_and_reports_a_changed_one(workdir: Path) -> None:
    from stepfork.analysis import diff_traces
    from stepfork.trace import Trace

    agent = FANOUT
    _copy(agent, workdir)
    record(agent, workdir, "a.sftrace")
    trace = Trace.load(workdir / "a.sftrace")
    calls = [e for e in trace.events if e.type == "tool_call"]
    assert len(calls) == 3
    # the same run with the siblings' lines in another order (they finished in another order)
    swapped = trace.model_copy(deep=True)
    positions = [i for i, e in enumerate(swapped.events) if e.type == "tool_call"]
    first, last = positions[0], positions[-1]
    swapped.events[first], swapped.events[last] = swapped.events[last], swapped.events[first]
    assert diff_traces(trace, swapped).equivalent
    changed = trace.model_copy(deep=True)
    target = next(e for e in changed.events if e.type == "tool_call" and e.input == {"city": "Rome"})
    object.__setattr__(target, "input", {"city": "Roma"})
    result = diff_traces(trace, changed)
    assert not result.equivalent
    assert [(s.label, [c.path for c in s.changes]) for s in result.steps if s.kind == "changed"] == [
        ("fetch_weather", ["input.city"])
    ]


@pytest.mark.slow
def test_the_resumed_hitl_run_replays_from_its_recorded_command_and_its_exported_test_passes(
    workdir: Path,
) -> None:
    agent = AGENTS[2]
    _copy(agent, workdir)
    done = run([sys.executable, "hitl_agent.py", "resume", "resumed.sftrace"], workdir)
    assert done.returncode == 0, done.stderr
    entry = "hitl_agent:resume_agent"
    for _ in range(REPLAYS):
        replayed = stepfork(workdir, "replay", "resumed.sftrace", "--entrypoint", entry)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "Recorded behavior: MATCHED" in replayed.stdout
        assert "1. tool book_hotel (substituted)" in replayed.stdout
    exported = stepfork(workdir, "export", "resumed.sftrace", "--entrypoint", entry, "-o", "test_resumed.py")
    assert exported.returncode == 0, exported.stderr
    ran = stepfork(workdir, "run", "test_resumed.py")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "PASSED" in ran.stdout
