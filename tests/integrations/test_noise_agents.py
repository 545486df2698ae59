"""Issue 28, "Done when": noise is never read as behaviour, on every agent in examples/, through the real CLI.

Every example's fake provider behaves as the real API (fresh response and tool-call ids, ``created``,
request-id and date headers per response), so two recordings of the same code differ in all of these.
For each agent (OpenAI, Anthropic, pydantic-ai, LangGraph scripted and on ChatOpenAI, streaming and not,
the asyncio fan-out, the script agent): ``stepfork diff`` of two recordings of the same code says
``Result: BEHAVIOR EQUIVALENT`` (exit 0), and a changed system prompt says BEHAVIOR CHANGED (exit 1) with the
prompt's path as the first change. A LangGraph ``create_react_agent`` on ChatOpenAI whose entrypoint
returns its ``AIMessage`` objects (LangChain mints their ids anew on every run) replays MATCHED every time
(20 of 20 in CI) and its exported test passes, as does the scripted model's agent whose ids the recording
serves back; the same agent returning a tool-provided id where the recording had its own id is DIVERGED
at that path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEPFORK = Path(sys.executable).parent / "stepfork"
REPLAYS = 20


@dataclass(frozen=True)
class Agent:
    name: str
    files: tuple[str, ...]  # example files to copy (folder/file)
    record: tuple[str, ...]  # the command recording into {bundle}, run in the copy
    source: str  # the file holding the system prompt
    system: tuple[str, str]  # the system prompt, and the changed one
    path: str  # where diff names the changed prompt, first


OPENAI_SYSTEM = ("You are a concise weather assistant.", "You are a chatty weather assistant.")
PY = sys.executable
AGENTS = [
    Agent(
        "openai_agent",
        ("openai_agent/openai_agent.py", "openai_agent/fake_openai.py"),
        (PY, "openai_agent.py", "record", "{bundle}"),
        "openai_agent.py",
        OPENAI_SYSTEM,
        "input.body.messages[0].content",
    ),
    Agent(
        "anthropic_agent",
        ("anthropic_agent/anthropic_agent.py", "anthropic_agent/fake_anthropic.py"),
        (PY, "anthropic_agent.py", "record", "{bundle}"),
        "anthropic_agent.py",
        OPENAI_SYSTEM,
        "input.body.system",
    ),
    Agent(
        "pydantic_ai_weather",
        ("pydantic_ai_weather/weather_agent.py",),
        (PY, "-c", "import sys, weather_agent as m; m.record_run(sys.argv[1])", "{bundle}"),
        "weather_agent.py",
        ("Be concise, reply with one sentence.", "Be thorough, reply with one paragraph."),
        "input.request.messages[0].instructions",
    ),
    Agent(
        "langgraph_react",
        ("langgraph_react/react_agent.py",),
        (PY, "react_agent.py", "record-messages", "{bundle}"),
        "react_agent.py",
        ("You plan days out: check the weather, a museum and a table.", "You plan days out, briefly."),
        "input.request.messages[0].content",
    ),
    Agent(
        "langgraph_openai",
        ("langgraph_openai/react_openai.py", "openai_agent/fake_openai.py"),
        (PY, "react_openai.py", "record", "{bundle}"),
        "react_openai.py",
        OPENAI_SYSTEM,
        "input.body.messages[0].content",
    ),
    Agent(
        "langgraph_openai_streaming",
        ("langgraph_openai/react_openai.py", "openai_agent/fake_openai.py"),
        (PY, "react_openai.py", "record-stream", "{bundle}"),
        "react_openai.py",
        OPENAI_SYSTEM,
        "input.body.messages[0].content",
    ),
    Agent(
        "asyncio_fanout",
        ("asyncio_fanout/fanout_agent.py",),
        (PY, "fanout_agent.py", "record", "{bundle}"),
        "fanout_agent.py",
        ("You plan city breaks: name three cities.", "You plan beach holidays: name three cities."),
        "input.messages[0].content",
    ),
    Agent(
        "script_agent",
        ("script_agent/weather_script.py",),
        (str(STEPFORK), "record", "-o", "{bundle}", "--", PY, "weather_script.py", "Paris"),
        "weather_script.py",
        OPENAI_SYSTEM,
        "input.body.messages[0].content",
    ),
]


@pytest.fixture
def openai_server() -> Iterator[dict[str, str]]:
    """The script agent's fake OpenAI API on 127.0.0.1, and the environment pointing the SDK at it."""
    sys.path.insert(0, str(EXAMPLES / "script_agent"))
    try:
        from fake_server import serve
    finally:
        sys.path.remove(str(EXAMPLES / "script_agent"))
    server, _ = serve()
    port = server.server_address[1]
    yield {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "sk-local"}
    server.shutdown()
    server.server_close()


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def stepfork(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([str(STEPFORK), *args], cwd)


def copy(files: tuple[str, ...], into: Path) -> None:
    for name in files:
        shutil.copy2(EXAMPLES / name, into / Path(name).name)


def record(agent: Agent, cwd: Path, bundle: str, env: dict[str, str]) -> None:
    done = run([part.format(bundle=bundle) for part in agent.record], cwd, env)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    if not STEPFORK.exists():
        pytest.skip("the stepfork executable is not installed beside this interpreter")
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("agent", AGENTS, ids=[a.name for a in AGENTS])
def test_the_same_code_twice_is_equivalent_and_a_changed_system_prompt_is_the_first_change(
    agent: Agent, workdir: Path, openai_server: dict[str, str]
) -> None:
    copy(agent.files, workdir)
    record(agent, workdir, "a.sftrace", openai_server)
    record(agent, workdir, "b.sftrace", openai_server)
    same = stepfork(workdir, "diff", "a.sftrace", "b.sftrace")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "Result: BEHAVIOR EQUIVALENT" in same.stdout
    strict = stepfork(workdir, "diff", "a.sftrace", "b.sftrace", "--strict")
    if agent.name not in ("asyncio_fanout", "langgraph_react", "pydantic_ai_weather"):
        # a live provider's noise is there, and counted by --strict (the scripted models make none)
        assert strict.returncode == 1, strict.stdout
    source = workdir / agent.source
    text = source.read_text()
    assert agent.system[0] in text
    source.write_text(text.replace(agent.system[0], agent.system[1]))
    record(agent, workdir, "c.sftrace", openai_server)
    changed = stepfork(workdir, "diff", "a.sftrace", "c.sftrace", "--json")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    report = json.loads(changed.stdout)
    assert report["result"] == "behavior_changed"
    changes = [c for s in report["steps"] for c in s["changes"]]
    assert changes[0]["path"] == agent.path, changes[:3]
    assert changes[0]["expected"] == agent.system[0]
    # every real change is the prompt itself: the provider's noise around it is not reported
    assert {c["actual"] for c in changes} == {agent.system[1]}, changes


LANGGRAPH_ENTRYPOINTS = [
    ("langgraph_openai", "react_openai:run_agent"),
    ("langgraph_openai_streaming", "react_openai:run_agent_streaming"),
    ("langgraph_react", "react_agent:run_agent_messages"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "entry"), LANGGRAPH_ENTRYPOINTS, ids=[n for n, _ in LANGGRAPH_ENTRYPOINTS])
def test_a_langgraph_agent_returning_its_ai_messages_replays_matched_every_time(
    name: str, entry: str, workdir: Path
) -> None:
    agent = next(a for a in AGENTS if a.name == name)
    copy(agent.files, workdir)
    record(agent, workdir, "run.sftrace", {})
    recorded = json.loads((workdir / "run.sftrace" / "events.jsonl").read_text().splitlines()[-1])
    assert recorded["output"]["messages"][0]["value"]["id"].startswith("lc_run--")
    matched = 0
    for _ in range(REPLAYS):
        done = stepfork(workdir, "replay", "run.sftrace", "--entrypoint", entry)
        assert done.returncode == 0, done.stdout + done.stderr
        matched += "Recorded behavior: MATCHED" in done.stdout
    assert matched == REPLAYS
    exported = stepfork(workdir, "export", "run.sftrace", "--entrypoint", entry, "--output", "test_reg.py")
    assert exported.returncode == 0, exported.stderr
    ran = stepfork(workdir, "run", "test_reg.py")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "PASSED" in ran.stdout


@pytest.mark.slow
def test_an_agent_returning_a_tool_provided_id_where_it_returned_its_own_is_diverged_at_that_path(
    workdir: Path,
) -> None:
    agent = next(a for a in AGENTS if a.name == "langgraph_openai")
    copy(agent.files, workdir)
    record(agent, workdir, "run.sftrace", {})
    source = workdir / "react_openai.py"
    text = source.read_text()
    own = '"answer_id": ai[-1].id'
    assert own in text
    # the weather service's report id: handed out by the recording, never the agent's own message id
    source.write_text(text.replace(own, '"answer_id": json.loads(messages[2].content)["report_id"]'))
    done = stepfork(workdir, "replay", "run.sftrace", "--entrypoint", "react_openai:run_agent")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Recorded behavior: DIVERGED" in done.stdout
    assert "output differs at 'answer_id'" in done.stdout
    assert "wr_" in done.stdout


@pytest.mark.slow
def test_check_passes_a_corpus_of_langgraph_runs_whose_ai_message_ids_are_minted_anew(workdir: Path) -> None:
    agent = next(a for a in AGENTS if a.name == "langgraph_openai")
    copy(agent.files, workdir)
    (workdir / "runs").mkdir()
    for number in range(2):
        record(agent, workdir, f"runs/run-{number}.sftrace", {})
    done = stepfork(workdir, "check", "runs", "--entrypoint", "react_openai:run_agent", "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"MATCHED\s+2\b", done.stdout), done.stdout
