"""examples/*_agent (OpenAI, Anthropic, LangGraph, pydantic-ai): record, validate, replay, export, run.

Each step is the real command in a subprocess, in a copy of the example (the tree is never touched).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# every example recorded, replayed, exported and run through the CLI: `hatch run slow:test`
pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEPFORK = Path(sys.executable).parent / "stepfork"
SECRET = "c2VjcmV0LXRva2Vu"  # the bearer token's payload in examples/openai_agent (C5)


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, timeout=300)


@pytest.mark.parametrize(
    ("folder", "module"),
    [
        ("openai_agent", "openai_agent"),
        ("anthropic_agent", "anthropic_agent"),
        ("langgraph_agent", "langgraph_agent"),
        ("pydantic_ai_agent", "pydantic_ai_agent"),
    ],
)
def test_the_example_records_replays_and_its_exported_test_passes(
    folder: str, module: str, tmp_path: Path
) -> None:
    if not STEPFORK.exists():
        pytest.skip("the stepfork executable is not installed beside this interpreter")
    for source in (EXAMPLES / folder).glob("*.py"):
        shutil.copy2(source, tmp_path / source.name)
    recorded = run([sys.executable, f"{module}.py", "record", "run.sftrace"], tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    (tmp_path / "expected.json").write_text(recorded.stdout)
    steps = [
        ["validate", "run.sftrace", "--verify-integrity"],
        ["replay", "run.sftrace", "--entrypoint", f"{module}:run_agent"],
        [
            "export",
            "run.sftrace",
            "--pytest",
            "--entrypoint",
            f"{module}:run_agent",
            "--expect-output",
            "expected.json",
            "--output",
            "test_regression.py",
        ],
        ["run", "test_regression.py"],
    ]
    for step in steps:
        done = run([str(STEPFORK), *step], tmp_path)
        assert done.returncode == 0, f"stepfork {' '.join(step)}:\n{done.stdout}\n{done.stderr}"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".py")]
    leaked = [p.name for p in written if p.name != f"{module}.py" and SECRET in p.read_text(errors="replace")]
    assert leaked == []
