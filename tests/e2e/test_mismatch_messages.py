"""Failures that explain themselves (issue 13): what a user reads when a replay disagrees.

``str()`` of a ReplayMismatchError, as pytest prints it for a ``@pytest.mark.stepfork`` test, shows within
about 15 lines the call, every differing path (the first marked first) with both values and their JSON
types, the redacted input previews, abbreviated fingerprints and a hint; the exported test run by
``stepfork run``, the replay report and ``stepfork diff`` list every differing path too; a recorded failure
the agent cannot catch makes the report suggest ``--raise-as``. Everything runs as a user types it
(pytest and ``stepfork`` in subprocesses).

The marker test's variants are the cells of one parametrized test, run by one ``pytest`` subprocess per
test module (each variant still its own failing test, its ``E`` lines read from its own section).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import cli_env, run_cli
from .raise_as_support import copy_recorded, record_agent

AGENT = """
import os
from stepfork.trace import trace_tool


@trace_tool
def sample(temperature, prompt, options):
    return {"text": "ok " + prompt, "api_key": "sk-live-0123456789abcdef"}


@trace_tool
def finish(note):
    return "done"


def agent():
    variant = os.environ.get("VARIANT", "")
    temperature = 1 if variant == "int" else 1.0
    prompt = "Hello there" if variant == "string" else "hello there"
    options = {f"o{i}": i for i in range(12)}
    if variant == "many":
        options = {f"o{i}": i + 100 for i in range(12)}
    out = sample(temperature=temperature, prompt=prompt, options=options)
    if variant != "missing":
        finish(note="done")
    if variant == "extra":
        finish(note="again")
    return {"text": out["text"], "options": options, "notify": variant != "output"}
"""

VARIANTS = ("int", "string", "many", "extra", "missing")

TEST = f"""
import pytest
import sampler


@pytest.mark.parametrize("variant", {list(VARIANTS)!r})
@pytest.mark.stepfork("sample.sftrace")
def test_agent(stepfork, variant, monkeypatch):
    monkeypatch.setenv("VARIANT", variant)
    sampler.agent()
"""

RECORD = """
from stepfork.trace import record
import sampler

with record("sampler", output="sample.sftrace") as session:
    session.set_output(sampler.agent())
"""

HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mismatch")
    (root / "sampler.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (root / "test_agent.py").write_text(textwrap.dedent(TEST), encoding="utf-8")
    (root / "record.py").write_text(textwrap.dedent(RECORD), encoding="utf-8")
    subprocess.run([sys.executable, "record.py"], cwd=root, check=True, env=cli_env())
    return root


@pytest.fixture(scope="module")
def failures(work: Path) -> dict[str, str]:
    """Run the marker test's variants in one pytest subprocess; return, per variant, the exception text
    pytest printed in that test's failure section (its ``E`` lines)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_agent.py", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=work,
        capture_output=True,
        text=True,
        env=cli_env(),
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{len(VARIANTS)} failed" in done.stdout, done.stdout
    found: dict[str, list[str]] = {}
    section: list[str] | None = None
    for line in done.stdout.splitlines():
        header = re.fullmatch(r"_+ test_agent\[(\w+)\] _+", line)
        if header:
            section = found.setdefault(header.group(1), [])
        elif line.startswith("E ") and section is not None:
            section.append(line[1:].strip())
    assert set(found) == set(VARIANTS), done.stdout
    return {variant: "\n".join(lines) for variant, lines in found.items()}


def _text(failures: dict[str, str], variant: str) -> str:
    assert failures[variant], variant  # the E lines of that variant's failure
    return failures[variant]


def test_float_vs_int_names_both_types_previews_and_a_hint(failures: dict[str, str]) -> None:
    text = _text(failures, "int")
    assert "call #1: input diverged from the recording at $.temperature (tool 'sample', step" in text
    assert "$.temperature (first): expected 1.0 (number, float), actual 1 (number, int)" in text
    assert 'recorded: tool sample  input {"options":{"o0":0,' in text  # previews cut to one line
    assert 'live:     tool sample  input {"options":{"o0":0,' in text
    # the spec's words ("Matching guarantees") and the earlier implementation's (issue 32)
    fingerprints = r"recorded input fingerprint: [0-9a-f]{12}…\nactual input fingerprint:   [0-9a-f]{12}…"
    assert re.search(fingerprints, text)
    assert not HEX64.search(text)  # abbreviated; the full ones stay on error.diagnostic
    assert "hint: equal numbers of different JSON types" in text
    assert len(text.splitlines()) <= 16


def test_a_changed_string_shows_both_strings(failures: dict[str, str]) -> None:
    text = _text(failures, "string")
    assert '$.prompt (first): expected "hello there" (string), actual "Hello there" (string)' in text
    assert "hint: the strings differ only in letter case" in text


def test_every_differing_path_up_to_a_limit_then_a_count(failures: dict[str, str]) -> None:
    text = _text(failures, "many")
    assert "differing paths (12):" in text
    assert "$.options.o0 (first): expected 0 (number, int), actual 100 (number, int)" in text
    assert "$.options.o1: expected 1 (number, int), actual 101 (number, int)" in text
    assert "... and 4 more" in text
    assert text.count("(first)") == 1
    assert len(text.splitlines()) <= 16


def test_an_extra_call_says_the_recording_ended(failures: dict[str, str]) -> None:
    text = _text(failures, "extra")
    assert "unexpected tool call 'finish': every recorded call was already consumed" in text
    assert "recorded: no further call (the recording ended)" in text
    assert 'live:     tool finish  input {"note":"again"}' in text
    assert "hint: the agent makes more calls than the recording has (an extra call)" in text


def test_a_missing_call_names_the_recorded_call_left(failures: dict[str, str]) -> None:
    text = _text(failures, "missing")
    assert "replay ended before consuming 1 recorded dependency call(s): 'finish'" in text
    assert 'recorded: tool finish  input {"note":"done"}' in text
    assert "live:     no further call (the run ended)" in text
    assert "hint: the agent stopped before making 1 recorded call(s) (missing calls)" in text


def test_secrets_in_previews_are_redacted(failures: dict[str, str]) -> None:
    text = _text(failures, "many")
    assert "sk-live-0123456789abcdef" not in text


def test_replay_report_lists_every_differing_path(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VARIANT", "many")  # run_cli passes the environment on to the child
    result = run_cli("replay", "sample.sftrace", "--entrypoint", "sampler:agent", cwd=work)
    assert result.code == 1, result.text
    assert "    differing paths (12):" in result.out
    assert "      $.options.o0 (first): expected 0 (number, int), actual 100 (number, int)" in result.out
    assert "      ... and 4 more" in result.out


def test_exported_test_and_run_list_every_differing_output_path(work: Path) -> None:
    (work / "expected.json").write_text(
        '{"text": "ok hello", "options": {}, "notify": false}', encoding="utf-8"
    )
    exported = run_cli(
        "export",
        "sample.sftrace",
        "--pytest",
        "--entrypoint",
        "sampler:agent",
        "--expect-output",
        "expected.json",
        "--output",
        "test_exported.py",
        "--overwrite",
        cwd=work,
    )
    assert exported.code == 0, exported.text
    result = run_cli("run", "test_exported.py", cwd=work)
    assert result.code == 1, result.text
    assert "behavior mismatch at 'notify': expected false, got true" in result.out
    assert "differing paths (14):" in result.out
    assert "notify (first): expected false (boolean), actual true (boolean)" in result.out
    assert "options.o0: expected <missing>, actual 0 (number, int)" in result.out
    assert "... and 6 more" in result.out


def test_an_uncaught_recorded_failure_suggests_raise_as(tmp_path: Path) -> None:
    work = copy_recorded(record_agent(tmp_path / "recorded"), tmp_path / "work")
    result = run_cli("replay", "rl.sftrace", "--entrypoint", "rl_agent:run", cwd=work)
    assert result.code == 1, result.text
    assert "--raise-as rl_agent.RateLimited=MODULE:CLASS" in result.out
    with_class = run_cli(
        "replay",
        "rl.sftrace",
        "--entrypoint",
        "rl_agent:run",
        "--raise-as",
        "rl_agent.RateLimited=rl_agent:RateLimited",
        cwd=work,
    )
    assert with_class.code == 0, with_class.text
    assert "--raise-as rl_agent.RateLimited=MODULE:CLASS" not in with_class.out
