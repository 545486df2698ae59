"""An example agent program run through the real ``stepfork`` CLI against the local OpenAI-compatible server.

The framework tests (issue 30) tell one story per example, each step a subprocess, in a copy of the
example's folder: ``stepfork record -- python SCRIPT ARGS``, ``inspect``, ``diff`` of two recordings,
``replay`` (unchanged, and with a changed copy of the program), ``export ... -- python`` and ``run``; and the
same agent recorded in-process (``record(...)``, the capture enabled as ``stepfork record`` enables it) and
replayed with ``replay_entrypoint``, whose verdict compares the agent's output (MATCHED). The server's
request counter proves that no replay reached it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_openai import LocalOpenAI

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
STEPFORK = Path(sys.executable).parent / "stepfork"

IN_PROCESS = '''"""Record or replay an example's function in-process.

python inproc.py record|replay BUNDLE MODULE:FUNCTION ARGS...
"""
import asyncio
import importlib
import json
import sys

from stepfork.integrations.autocapture import enable

enable()  # every httpx client created from now on is captured, as under `stepfork record --`


def run():
    module_name, function = target.split(":")
    result = getattr(importlib.import_module(module_name), function)(*args)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


mode, bundle, target, *args = sys.argv[1:]
if mode == "record":
    from stepfork.trace import record

    with record(target, output=bundle) as session:
        session.set_output(run())
else:
    from stepfork.replay.outcome import replay_entrypoint

    print(json.dumps(replay_entrypoint(bundle, run).to_dict()))
'''


@dataclass
class Program:
    """A copy of an example folder, run with ``env`` (the server's URL in it) against ``server``."""

    folder: Path
    server: LocalOpenAI
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 600

    @classmethod
    def copy(cls, example: str, into: Path, server: LocalOpenAI, **env: str) -> Program:
        """Copy ``examples/<example>`` into ``into`` (with the in-process harness ``inproc.py``)."""
        shutil.copytree(EXAMPLES / example, into, ignore=shutil.ignore_patterns("__pycache__", "*.sftrace"))
        (into / "inproc.py").write_text(IN_PROCESS)
        base = {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_BASE": server.base_url,  # LlamaIndex's name for it
            "OPENAI_API_KEY": "sk-local-test-key",
            "PYTHONPATH": str(into),
        }
        return cls(into, server, {**base, **env})

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``args`` (a command) in the folder, with the program's environment."""
        env = {**os.environ, **self.env}
        return subprocess.run(
            list(args),
            cwd=self.folder,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=self.timeout,
        )

    def stepfork(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(STEPFORK), *args)

    def record(self, bundle: str, *program: str) -> subprocess.CompletedProcess[str]:
        """``stepfork record -o BUNDLE -- python PROGRAM...``; fails the test when it fails."""
        done = self.stepfork("record", "-o", bundle, "--", sys.executable, *program)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
        return done

    def replay(self, bundle: str, *program: str) -> dict[str, Any]:
        """``stepfork replay BUNDLE --json -- python PROGRAM...``: the report, with ``exit_code`` checked
        against the process's and the program's stderr under ``"stderr"``."""
        done = self.stepfork("replay", bundle, "--json", "--", sys.executable, *program)
        try:
            report: dict[str, Any] = json.loads(done.stdout)
        except ValueError as exc:
            raise AssertionError(done.stdout[-3000:] + done.stderr[-5000:]) from exc
        assert report["exit_code"] == done.returncode
        report["stderr"] = done.stderr
        return report

    def changed(self, script: str, old: str, new: str, name: str) -> str:
        """A copy of ``script`` in the folder with every ``old`` replaced by ``new``; its name."""
        text = (self.folder / script).read_text()
        assert old in text, f"{old!r} is not in {script}"
        copy = f"{name}_{script}"
        (self.folder / copy).write_text(text.replace(old, new))
        return copy

    def in_process(self, mode: str, bundle: str, target: str, *args: str) -> dict[str, Any]:
        """Record (``mode`` "record") or replay the function ``target`` (``MODULE:FN``) in-process; the
        replay's report."""
        done = self.run(sys.executable, "inproc.py", mode, bundle, target, *args)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
        if mode == "record":
            return {}
        report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return report


def divergence_paths(report: dict[str, Any]) -> list[str]:
    """The JSON paths of a replay report's divergence (its first difference first)."""
    diagnostic = (report.get("matching") or {}).get("diagnostic") or {}
    paths = [d.get("path") for d in diagnostic.get("differences") or []]
    return [p for p in paths if p] or [str(diagnostic.get("path"))]


def passed(report: dict[str, Any]) -> bool:
    """True for a replay that matched every call and completed (exit 0)."""
    return report["exit_code"] == 0 and report["matching"]["status"] == "COMPLETE"


def inspected(program: Program, bundle: str) -> dict[str, Any]:
    """``stepfork inspect``'s provider/model labels and token counts of a bundle: ``{"labels": [...],
    "tokens": (total, prompt, completion)}``."""
    done = program.stepfork("inspect", bundle)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"Tokens:\s+(\d+) \((\d+) prompt, (\d+) completion\)", done.stdout)
    assert found, done.stdout
    labels = re.findall(r"llm_request\s+(\S+)", done.stdout)
    return {"labels": labels, "tokens": tuple(int(n) for n in found.groups()), "text": done.stdout}


REPLAYS = 3
"""Replays of each unchanged recording (every one must pass)."""


def prompt_and_tool_changes(
    prompt: tuple[str, str], where: str, *, tools: str = "$.body.tools", function: str = ".function"
) -> dict[str, tuple[str, str, str]]:
    """The three edits every example's replay must diverge on, for :func:`story`: ``prompt`` (old, new) of
    its question, diverging at ``where``; the description of ``get_weather`` and a new argument of
    ``get_air_quality`` (each example's two tools), diverging in the request's tool list (``tools``, each
    tool's schema under ``function``: Chat Completions; ``""`` for the Responses API)."""
    return {
        "prompt": (*prompt, where),
        "tool description": (
            '"""Get the current weather in a city."""',
            '"""Get the weather in a city, in Celsius."""',
            f"{tools}[0]{function}.description",
        ),
        "tool argument": (
            "def get_air_quality(city: str) -> str:",
            "def get_air_quality(city: str, units: str) -> str:",
            f"{tools}[1]{function}.parameters",
        ),
    }


def story(
    program: Program,
    command: list[str],
    changes: dict[str, tuple[str, str, str]],
    *,
    script: str,
    llm_calls: int,
    tools: list[str],
    telemetry: int = 0,
) -> dict[str, Any]:
    """The whole story of one example through the CLI; returns its figures.

    ``command``: the program after ``python`` (``[SCRIPT, ARGS...]``, or a wrapper's); ``changes``: name ->
    ``(old, new, path)``, an edit of ``script`` and the JSON path its replay must diverge at (the first
    difference, or one of the differences when the SDK sends the edited text twice: smolagents lists its
    tools in the system prompt too);
    ``llm_calls``/``tools``: what the recording holds (tools sorted by name, ``http`` calls included);
    ``telemetry``: the exports each replay answers. Two recordings of the same code diff EQUIVALENT,
    ``inspect`` shows provider/model labels and token counts, :data:`REPLAYS` replays pass, each change
    diverges at its path, the exported test (``--expect-output`` the recorded stdout) passes, and the
    server counts no request from any replay or test.
    """
    server = program.server
    program.record("a.sftrace", *command)
    program.record("b.sftrace", *command)
    from stepfork.trace import load_trace

    events = load_trace(program.folder / "a.sftrace").events
    assert sorted(e.name for e in events if str(e.type) == "tool_call") == sorted(tools)
    shown = inspected(program, "a.sftrace")
    assert len(shown["labels"]) == llm_calls, shown["text"]
    assert all(label.startswith("127.0.0.1/") for label in shown["labels"]), shown["labels"]
    assert min(shown["tokens"]) > 0, shown["tokens"]  # (total, prompt, completion)
    same = program.stepfork("diff", "a.sftrace", "b.sftrace")
    assert "Result: BEHAVIOR EQUIVALENT" in same.stdout, same.stdout
    assert same.returncode == 0

    sent = len(server.requests)
    reports = [program.replay("a.sftrace", *command) for _ in range(REPLAYS)]
    assert all(map(passed, reports)), [(r["matching"]["message"], r["stderr"][-2000:]) for r in reports]
    assert [r["requests"]["telemetry"] for r in reports] == [telemetry] * REPLAYS
    diverged: dict[str, list[str]] = {}
    for name, (old, new, where) in changes.items():
        changed = program.changed(script, old, new, name)
        report = program.replay("a.sftrace", *[changed if part == script else part for part in command])
        assert report["exit_code"] == 1, (name, report["matching"], report["stderr"][-2000:])
        diverged[name] = divergence_paths(report)
        assert any(path.startswith(where) for path in diverged[name]), (name, diverged[name])
    assert len(server.requests) == sent

    expected = program.folder / "expected.json"
    expected.write_text(json.dumps(program.record("c.sftrace", *command).stdout.removesuffix("\n")))
    sent = len(server.requests)
    exported = program.stepfork(
        "export", "c.sftrace", "-o", "test_example.py", "--expect-output", str(expected), "--", "python",
        *command,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stdout + exported.stderr
    verdict = program.stepfork("run", "test_example.py")
    assert "Verdict: PASSED" in verdict.stdout, verdict.stdout + verdict.stderr
    assert verdict.returncode == 0
    assert len(server.requests) == sent
    return {"replays": sum(map(passed, reports)), "tokens": shown["tokens"], "diverged": diverged}


def replays_pass(program: Program, command: list[str], *, llm_calls: int) -> int:
    """Record ``command``, check its LLM calls and token counts, replay it :data:`REPLAYS` times (each must
    pass, the server counting nothing); the number passed."""
    program.record("run.sftrace", *command)
    shown = inspected(program, "run.sftrace")
    assert len(shown["labels"]) == llm_calls, shown["text"]
    assert min(shown["tokens"]) > 0, shown["tokens"]
    sent = len(program.server.requests)
    reports = [program.replay("run.sftrace", *command) for _ in range(REPLAYS)]
    assert all(map(passed, reports)), [(r["matching"]["message"], r["stderr"][-2000:]) for r in reports]
    assert len(program.server.requests) == sent
    return sum(map(passed, reports))


def matched_in_process(program: Program, target: str, *args: str) -> int:
    """Record ``target`` (``MODULE:FN``) in-process and replay it :data:`REPLAYS` times with
    ``replay_entrypoint``: each MATCHED, the server counting nothing; the number MATCHED."""
    program.in_process("record", "inproc.sftrace", target, *args)
    sent = len(program.server.requests)
    reports = [program.in_process("replay", "inproc.sftrace", target, *args) for _ in range(REPLAYS)]
    statuses = [(r["exit_code"], r["matching"]["status"], r["behavior"]["status"]) for r in reports]
    assert statuses == [(0, "COMPLETE", "MATCHED")] * REPLAYS, [r["matching"] for r in reports]
    assert len(program.server.requests) == sent
    return len(statuses)
