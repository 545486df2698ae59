"""docs/getting-started.md covers the whole workflow and can be followed twice in a row (issue 13).

Its commands run as documented twice in the same copy of the tree: the second pass must succeed exactly
like the first (no ``already exists``), and every file they write must be ignored by git.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, cli_env
from .test_docs_commands import SKIPPED_TOOLS, extract_commands

GUIDE = REPO / "docs" / "getting-started.md"


def _run_guide(sandbox: Path) -> list[str]:
    """Run the guide's commands in ``sandbox`` as the docs test does; return every command's output."""
    env = cli_env()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    cwd, outputs = sandbox, []
    for command in extract_commands(GUIDE.read_text(encoding="utf-8")):
        words = command.text.split()
        if not words or words[0] in SKIPPED_TOOLS:
            continue
        if words[0] == "cd":
            cwd = (cwd / words[1]).resolve()
            continue
        done = subprocess.run(
            ["bash", "-c", command.text], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
        output = done.stdout + done.stderr
        assert done.returncode == command.exit_code, f"{command.text}\nexit {done.returncode}\n{output}"
        for expected in command.expected:
            if expected.strip() != "...":
                assert expected in output.splitlines(), f"{command.text}: missing {expected!r} in\n{output}"
        outputs.append(output)
    return outputs


def test_the_guide_covers_the_whole_workflow() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    commands = " ".join(c.text for c in extract_commands(text))
    for step in ("validate", "inspect", "replay", "fork", "diff", "minimize", "export", "run", "score"):
        assert f"stepfork {step} " in commands, step
    assert "@pytest.mark.stepfork(" in text
    assert "python -m pytest test_quickstart_marker.py" in commands


@pytest.mark.slow  # long end-to-end story: `hatch run slow:test` (tests/conftest.py)
def test_the_guide_can_be_followed_twice_and_what_it_writes_is_ignored_by_git(tmp_path: Path) -> None:
    sandbox = tmp_path / "repo"
    shutil.copytree(REPO / "examples", sandbox / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.name for p in (sandbox / "examples" / "quickstart").iterdir()}
    first = _run_guide(sandbox)
    second = _run_guide(sandbox)
    assert len(first) == len(second)
    assert not any("already exists" in output for output in second)
    after = {p.name for p in (sandbox / "examples" / "quickstart").iterdir()}
    made = sorted(after - before - {"__pycache__"})
    assert {"fixed.sftrace", "minimal.sftrace", "test_notify_fixed.py", "receipts"} <= set(made)
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the ignore rules cannot be asked")
    # ask git about the repository's .gitignore in a repository of its own (the suite may run from a copy
    # of the tree that is not a checkout, as .ci/run does)
    shutil.copy2(REPO / ".gitignore", sandbox / ".gitignore")
    subprocess.run(["git", "init", "-q"], cwd=sandbox, check=True)
    quickstart = sandbox / "examples" / "quickstart"
    # a directory is named with its slash: the paths do not exist in the checkout, and `dir/` rules
    # match directories only
    paths = [f"examples/quickstart/{name}" + ("/" if (quickstart / name).is_dir() else "") for name in made]
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *paths],
        cwd=sandbox,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert sorted(ignored) == sorted(paths)
