"""Agents whose framework tools have a visible side effect, run in a folder of their own against the local
OpenAI-compatible server (tests/integrations/test_framework_tools.py, tests/openai2/
test_framework_tools_openai2.py; issue 30): record them, replay them frozen or with the model live, and read
what their tools left behind (a line in side_effects.log, a row in side.db)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from local_openai import LocalOpenAI
from program_runs import IN_PROCESS, Program, divergence_paths, passed

from stepfork.trace import load_trace

HYBRID = '''"""python hybrid.py BUNDLE MODULE:FUNCTION LABEL ARGS...: the LLM LABEL live, tools frozen."""
import importlib
import json
import sys

from stepfork.integrations.autocapture import enable

enable()

from stepfork.replay.outcome import replay_entrypoint  # noqa: E402

bundle, target, label, *args = sys.argv[1:]
module_name, function = target.split(":")
run = getattr(importlib.import_module(module_name), function)
print(json.dumps(replay_entrypoint(bundle, lambda: run(*args), mode="hybrid", live_llms=[label]).to_dict()))
'''

LABEL = "127.0.0.1/gpt-4o-mini"


def agent_folder(tmp_path: Path, server: LocalOpenAI, scripts: dict[str, str]) -> Program:
    """A folder holding ``scripts`` and the in-process harnesses, run against ``server``."""
    folder = tmp_path / "agent"
    folder.mkdir()
    for name, text in {**scripts, "inproc.py": IN_PROCESS, "hybrid.py": HYBRID}.items():
        (folder / name).write_text(text)
    env = {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_BASE": server.base_url,  # LlamaIndex's name for it
        "OPENAI_API_KEY": "sk-local-test-key",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",  # the SDK's trace export goes to api.openai.com
        "PYTHONPATH": str(folder),
    }
    return Program(folder, server, env)


def tool_calls(program: Program, bundle: str) -> list[tuple[str, Any]]:
    """``(name, input)`` of the bundle's tool calls, in order."""
    events = load_trace(program.folder / bundle).events
    return [(e.name, e.input) for e in events if str(e.type) == "tool_call"]


def side_effects(program: Program) -> list[str]:
    """The lines the tools appended to side_effects.log (none when it does not exist)."""
    log = program.folder / "side_effects.log"
    return log.read_text().splitlines() if log.exists() else []


def sqlite_rows(program: Program) -> int:
    """The rows the LangGraph tool wrote into side.db."""
    db = program.folder / "side.db"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as connection:
        tables = connection.execute("select count(*) from sqlite_master where name = 'calls'").fetchone()[0]
        return int(connection.execute("select count(*) from calls").fetchone()[0]) if tables else 0


def forget_side_effects(program: Program) -> None:
    for name in ("side_effects.log", "side.db"):
        (program.folder / name).unlink(missing_ok=True)


def hybrid(program: Program, bundle: str, target: str, *args: str) -> dict[str, Any]:
    """The report of a replay of ``target`` with the LLM live (the local server answers) and tools frozen."""
    done = program.run(sys.executable, "hybrid.py", bundle, target, LABEL, *args)
    assert done.stdout.strip(), done.stderr[-5000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def frozen_in_process(program: Program, bundle: str, target: str, *args: str) -> dict[str, Any]:
    """``inproc.py replay``'s report, with nothing reaching the server."""
    sent = len(program.server.requests)
    report = program.in_process("replay", bundle, target, *args)
    assert len(program.server.requests) == sent
    return report


def assert_matched(report: dict[str, Any]) -> None:
    verdict = (report["exit_code"], report["matching"]["status"], report["behavior"]["status"])
    assert verdict == (0, "COMPLETE", "MATCHED"), report["matching"]


def assert_tool_diverged(report: dict[str, Any], tool: str, path: str) -> None:
    """A replay DIVERGED (exit 1) at the tool call ``tool``, first difference at ``path``."""
    assert report["exit_code"] == 1, report["matching"]
    diagnostic = report["matching"]["diagnostic"] or {}
    assert report["matching"]["code"] == "input_diverged", report["matching"]
    assert (diagnostic.get("expected_kind"), diagnostic.get("expected_label")) == ("tool", tool), diagnostic
    assert path in divergence_paths(report), report["matching"]


def served_not_run(program: Program, module: str) -> None:
    """The story of an agent ``module`` (``MODULE.py``, ``main(city)``) whose one tool, ``get_weather``,
    appends to side_effects.log: recorded by ``stepfork record --`` (one tool call, the model's city, the
    line written) and replayed frozen by ``stepfork replay`` (passed, no line, nothing sent); recorded
    in-process and replayed MATCHED (no line); replayed with the model live asking about Lyon: DIVERGED at
    the tool, ``$.city``, and still no line."""
    program.record("run.sftrace", f"{module}.py", "Paris")
    assert side_effects(program) == ["get_weather(Paris) ran"]
    assert tool_calls(program, "run.sftrace") == [("get_weather", {"city": "Paris"})]

    forget_side_effects(program)
    sent = len(program.server.requests)
    report = program.replay("run.sftrace", f"{module}.py", "Paris")
    assert passed(report), (report["matching"], report["stderr"][-3000:])
    assert side_effects(program) == []  # the tool's body never ran
    assert len(program.server.requests) == sent

    program.in_process("record", "inproc.sftrace", f"{module}:main", "Paris")
    forget_side_effects(program)
    assert_matched(frozen_in_process(program, "inproc.sftrace", f"{module}:main", "Paris"))
    assert side_effects(program) == []
    # the live model now asks about Lyon: the frozen tool must not answer with Paris's weather
    assert_tool_diverged(hybrid(program, "inproc.sftrace", f"{module}:main", "Lyon"), "get_weather", "$.city")
    assert side_effects(program) == []
