"""What README.md and docs/ show can be done as shown (NEWCOMER 24, 25).

- README's Python snippets run as written: the Record snippet saved as agent.py and run twice (the
  second run replaces the bundle, ``overwrite``), then the Replay snippet, which imports ``run_agent`` from
  agent, and the documented ``stepfork replay`` of it; neither records the bundle again.
  tests/e2e/test_docs_commands.py runs the ``console``/``bash`` blocks only, so these were never run: the
  Replay snippet called a ``run_agent`` no snippet defined, re-running the Record snippet ended in a
  traceback, and importing the Record snippet's module recorded over the bundle being replayed.
- Every file a documented command writes into the tree (``-o``/``--output``/``--html``/``--junit``/
  ``--receipt(s)`` of a ``stepfork`` command, ``Wrote X``, ``python SCRIPT record BUNDLE``), in any fenced
  block, is ignored by git, so that following the docs leaves ``git status`` clean. A ``cd examples/...``
  starts from the repository root; a ``cd`` in a block the docs test does not run (``text``) holds for
  that block only; a command refused (``# exit 2``) writes nothing; a command on a bundle or script that
  neither the tree nor an earlier command has (an illustration: ``rate.sftrace``, ``agent.py``) is skipped.
- Every requirement the docs quote for an extra of stepfork-trace (`` `openai>=...` ``) is the one its
  pyproject.toml declares.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _run(*command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, check=False, timeout=120)


def _stepfork() -> str:
    beside = Path(sys.executable).parent / "stepfork"
    return str(beside) if beside.exists() else "stepfork"


def _run_id(bundle: Path) -> str:
    return str(json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))["run_id"])


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_readme_snippets_run_as_written_record_module_then_replay(tmp_path: Path) -> None:
    """README: the Record block saved as agent.py and run (twice: the second run replaces the bundle), then
    the Replay block, which imports ``run_agent`` from agent, and the documented ``stepfork replay ...
    --entrypoint agent:run_agent``: both replay the bundle without recording it again (NEWCOMER2 10, 23)."""
    blocks = PYTHON_BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 2
    (tmp_path / "agent.py").write_text(blocks[0], encoding="utf-8")
    (tmp_path / "replay.py").write_text(blocks[1], encoding="utf-8")
    for _ in range(2):  # the second run finds the first run's bundle
        done = _run(sys.executable, "agent.py", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    bundle = tmp_path / "failure.sftrace"
    recorded = _run_id(bundle)
    done = _run(sys.executable, "replay.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'action': 'notify', 'reason': 'order shipped'}"
    done = _run(_stepfork(), "replay", "failure.sftrace", "--entrypoint", "agent:run_agent", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Recorded behavior: MATCHED" in done.stdout
    assert _run_id(bundle) == recorded  # replayed, never recorded again


def test_recording_over_a_bundle_without_overwrite_says_how_to_replace_it(tmp_path: Path) -> None:
    record = PYTHON_BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))[0]
    assert "overwrite=True" in record
    program = tmp_path / "record.py"
    program.write_text(record.replace(", overwrite=True", ""), encoding="utf-8")
    (tmp_path / "failure.sftrace").mkdir()
    (tmp_path / "failure.sftrace" / "manifest.json").write_text("{}")
    done = subprocess.run(
        [sys.executable, str(program)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    error = "stepfork.trace.errors.TraceStorageError"
    assert last == f"{error}: bundle already exists: failure.sftrace (pass overwrite=True)"


_OUTPUT_OPTIONS = ("-o", "--output", "--html", "--junit", "--receipt", "--receipts")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")


def _commands(document: Path) -> list[tuple[str, Path, list[str], list[str]]]:
    """``(command, cwd, words, wrote)`` of every ``$ `` line of ``document``'s fenced blocks, with the
    ``Wrote X`` lines of its output; commands refused (``# exit 2``) left out."""
    found: list[tuple[str, Path, list[str], list[str]]] = []
    chained = ROOT  # the cwd the console/bash blocks chain (as the docs test runs them)
    lines = document.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[index])
        if not fence:
            index += 1
            continue
        runs = fence[1] in ("console", "bash", "shell", "sh")
        cwd, index, pending = chained, index + 1, ""
        while index < len(lines) and lines[index].strip() != "```":
            line = lines[index]
            index += 1
            if line.startswith("$ ") or pending:
                text = pending + (line[2:] if line.startswith("$ ") else line.strip())
                if text.rstrip().endswith("\\"):
                    pending = text.rstrip()[:-1] + " "
                    continue
                pending = ""
                exit_code = _EXIT.search(text)
                try:
                    words = shlex.split(text, comments=True)
                except ValueError:
                    continue
                if words[:1] == ["cd"]:
                    cwd = (ROOT if words[1].startswith("examples/") else cwd) / words[1]
                    chained = cwd if runs else chained
                elif words and not (exit_code and exit_code[1] == "2"):
                    found.append((text, cwd.resolve(), words, []))
            elif found and (wrote := re.fullmatch(r"Wrote (\S+)", line.strip())):
                found[-1][3].append(wrote[1])
        index += 1
    return found


def _written(words: list[str], cwd: Path, made: set[Path]) -> list[Path] | None:
    """The paths a documented command names as its outputs, or None when it is no ``stepfork`` command or
    ``record`` script, or works on a bundle or a script that neither the tree nor an earlier command has
    (an illustration)."""
    if words[0] == "python" and len(words) > 3 and words[2] == "record":  # a record_main script
        return [cwd / words[3]] if (cwd / words[1]).is_file() else None
    if words[0] != "stepfork" or len(words) < 3:
        return None
    if "--" in words:  # stepfork record/replay/export ... -- python SCRIPT
        script = words[words.index("--") + 2 : words.index("--") + 3]
        if script and not (cwd / script[0]).is_file():
            return None
    first = words[2]
    known = (cwd / first).exists() or (cwd / first).resolve() in made
    if first.endswith((".sftrace", ".py")) and "://" not in first and not known:
        return None
    outputs = []
    for position, word in enumerate(words):
        name, _, value = word.partition("=")
        if name in _OUTPUT_OPTIONS:
            value = value or (words[position + 1] if position + 1 < len(words) else "")
            if value and "://" not in value and not value.startswith("/"):
                outputs.append(cwd / value)
    return outputs


def test_what_the_documented_commands_write_is_ignored_by_git(tmp_path: Path) -> None:
    written: set[Path] = set()
    for document in DOCS:
        made: set[Path] = set()
        for _text, cwd, words, wrote in _commands(document):
            paths = _written(words, cwd, made)
            if paths is not None:
                made.update(p.resolve() for p in [*paths, *(cwd / name for name in wrote)])
        written |= made
    names = sorted(
        str(path.relative_to(ROOT)) + ("/" if path.suffix in ("", ".sftrace") else "")
        for path in written
        if path.is_relative_to(ROOT)
    )
    # what the guide, the CLI reference, the view page and the integrations page write
    for expected in (
        "examples/quickstart/notify-redacted.sftrace/",
        "examples/quickstart/notify.html",
        "examples/google_genai_agent/weather.sftrace/",
        "examples/bedrock_agent/weather.sftrace/",
        "examples/script_agent/test_weather.py",
    ):
        assert expected in names, names
    assert shutil.which("git"), "git is needed to ask the ignore rules"
    # ask git about the repository's .gitignore in a repository of its own (the suite may run from a copy of
    # the tree that is not a checkout, as .ci/run does)
    shutil.copy2(ROOT / ".gitignore", tmp_path / ".gitignore")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *names],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    not_ignored = sorted(set(names) - set(ignored))
    assert not_ignored == [], "\n".join(not_ignored)
    # the bundle the examples ship stays tracked
    kept = subprocess.run(
        ["git", "check-ignore", "--no-index", "examples/quickstart/notify.sftrace/"],
        cwd=tmp_path,
        check=False,
    )
    assert kept.returncode == 1


def test_every_quoted_requirement_of_an_extra_is_the_declared_one() -> None:
    pyproject = tomllib.loads(
        (ROOT / "libs" / "stepfork-trace" / "pyproject.toml").read_text(encoding="utf-8")
    )
    declared = {
        re.match(r"[A-Za-z0-9_.-]+", requirement)[0]: requirement  # type: ignore[index]
        for extra in pyproject["project"]["optional-dependencies"].values()
        for requirement in extra
    }
    quoted = re.compile(r"`(" + "|".join(map(re.escape, declared)) + r")(>=[^`]*)`")
    wrong = [
        f"{document.name}:{number}: `{match[1]}{match[2]}`, declared `{declared[match[1]]}`"
        for document in DOCS
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1)
        for match in quoted.finditer(line)
        if f"{match[1]}{match[2]}" != declared[match[1]]
    ]
    assert wrong == []
