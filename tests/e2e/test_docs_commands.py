"""Every command shown in README.md and docs/*.md runs as documented (issue 4: docs examples are tested).

Rules for the docs (docs/cli.md says so too):
- In a ```console or ```bash block, lines starting with ``$ `` are commands and the other lines are their
  expected output; a block without any ``$ `` line is all commands. A trailing backslash continues a line.
- Each expected output line must appear in the command's output (stdout + stderr, compared line by line
  after stripping trailing spaces); ``...`` stands for lines not shown.
- A trailing ``# exit N`` comment gives the expected exit code (default 0).
- ``cd DIR`` changes the directory of the following commands of the same document.
- Commands of each document run in order in a fresh copy of README.md, docs/ and examples/ (never in the
  tree), with this interpreter's environment first on PATH. Installation and development commands (first
  word hatch, pip, uv, git) are not run; ``hatch run demo`` is tested by test_demo.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import REPO, cli_env

SKIPPED_TOOLS = frozenset({"hatch", "pip", "uv", "git"})
FENCE = re.compile(r"^```(console|bash|shell|sh)\s*$")
EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")


@dataclass
class Command:
    line: int
    text: str
    exit_code: int = 0
    expected: list[str] = field(default_factory=list)


def extract_commands(markdown: str) -> list[Command]:
    """The commands of every console/bash block of ``markdown``, in order (module docstring rules)."""
    commands: list[Command] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        if not FENCE.match(lines[index]):
            index += 1
            continue
        start = index + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        block = lines[start:end]
        prompted = any(line.startswith("$ ") for line in block)
        current: Command | None = None
        pending = ""
        for offset, raw in enumerate(block):
            is_command = (
                raw.startswith("$ ") if prompted else bool(raw.strip()) and not raw.lstrip().startswith("#")
            )
            if pending or is_command:
                text = raw[2:] if raw.startswith("$ ") else raw
                if text.rstrip().endswith("\\"):
                    pending += text.strip()[:-1].rstrip() + " "
                    continue
                text = pending + text.strip()
                pending = ""
                exit_code = 0
                match = EXIT.search(text)
                if match:
                    exit_code = int(match.group(1))
                    text = text[: match.start()]
                current = Command(start + offset + 1, text.strip(), exit_code)
                commands.append(current)
            elif current is not None and raw.strip():
                current.expected.append(raw.rstrip())
        index = end + 1
    return commands


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_extractor_follows_the_rules() -> None:
    text = (
        "x\n```console\n$ cd a\n$ stepfork run t.py \\\n  --json   # exit 2\n{\n...\n```\n"
        "```bash\nhatch test\n```\n"
    )
    found = extract_commands(text)
    assert [(c.text, c.exit_code, c.expected) for c in found] == [
        ("cd a", 0, []),
        ("stepfork run t.py --json", 2, ["{", "..."]),
        ("hatch test", 0, []),
    ]


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy2(REPO / "README.md", root / "README.md")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in ("docs", "examples"):
        shutil.copytree(REPO / name, root / name, ignore=ignore)
    return root


@pytest.mark.slow  # long end-to-end story: `hatch run slow:test` (tests/conftest.py)
@pytest.mark.parametrize("document", documents(), ids=lambda p: p.name)
def test_documented_commands_run_as_shown(document: Path, sandbox: Path) -> None:
    commands = extract_commands(document.read_text(encoding="utf-8"))
    env = cli_env()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    cwd = sandbox
    for command in commands:
        words = command.text.split()
        if not words or words[0] in SKIPPED_TOOLS:
            continue
        where = f"{document.name}:{command.line}: {command.text}"
        if words[0] == "cd":
            cwd = (cwd / words[1]).resolve()
            assert cwd.is_dir(), where
            continue
        done = subprocess.run(
            ["bash", "-c", command.text],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        output = done.stdout + done.stderr
        assert done.returncode == command.exit_code, f"{where}\nexit {done.returncode}\n{output}"
        actual = {line.rstrip() for line in output.splitlines()}
        for expected in command.expected:
            if expected.strip() == "...":
                continue
            assert expected in actual, f"{where}\nmissing line {expected!r} in:\n{output}"
