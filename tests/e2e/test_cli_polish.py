"""A newcomer's findings, through the real ``stepfork`` executable: ``check``'s options as replay's,
``diff`` escaping trace text, the user's typed path not mangled by redaction, the ``import`` convention
warning and ``export``'s non-Python program message (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path

from stepfork.trace import record, trace_tool

from .conftest import run_cli

ESC = "\x1b"


def test_check_takes_replays_orderings_and_refuses_another_up_front(tmp_path: Path) -> None:
    help_text = run_cli("check", "--help").out
    assert "auto|strict|concurrent|unordered" in help_text
    assert "relaxed" not in help_text
    assert "[worker|bundle]" in help_text
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    bad = run_cli("check", corpus, "-e", "agent:run", "--ordering", "relaxed")
    assert bad.code == 2
    assert bad.err.strip().splitlines() == [
        "Invalid --ordering 'relaxed'; expected one of auto, strict, concurrent, unordered."
    ]
    bad = run_cli("check", corpus, "-e", "agent:run", "--isolation", "process")
    assert bad.code == 2
    assert bad.err.strip() == "Invalid --isolation 'process'; expected one of worker, bundle."
    # any letter case: past the option checks, to the (empty) corpus
    ok = run_cli("check", corpus, "-e", "agent:run", "--isolation", "BUNDLE", "--ordering", "Concurrent")
    assert ok.code == 2
    assert "Invalid corpus" in ok.err
    assert "--isolation" not in ok.err
    assert "--ordering" not in ok.err


def test_check_corpus_defaults_to_replays_ordering() -> None:
    import inspect

    from stepfork.analysis.check import check_corpus

    assert inspect.signature(check_corpus).parameters["ordering"].default == "auto"


def _record(path: Path, *, agent: str, answer: str) -> Path:
    @trace_tool(name=f"look{ESC}[2J\nup")
    def lookup(city: str) -> str:
        return answer

    with record(agent, output=path):
        lookup("Paris\u202e")
    return path


def test_diff_escapes_control_characters_of_the_bundles(tmp_path: Path) -> None:
    base = _record(tmp_path / "a.sftrace", agent=f"..{ESC}[31m agent", answer="sunny")
    cand = _record(tmp_path / "b.sftrace", agent=f"..{ESC}[31m agent", answer="rain\u202e\x9b")
    done = run_cli("diff", base, cand)
    assert done.code == 1
    for raw in (ESC, "\u202e", "\x9b"):
        assert raw not in done.text
    assert "look\\x1b[2J\\nup" in done.out
    assert "\\x1b[31m agent" in done.out
    shown = run_cli("diff", base, cand, "--json")
    assert shown.code == 1
    for raw in (ESC, "\u202e", "\x9b"):
        assert raw not in shown.out
    data = json.loads(shown.out)  # still valid JSON, the same values once parsed
    assert data["baseline"]["agent_name"] == f"..{ESC}[31m agent"


def test_the_users_typed_path_is_not_redacted_in_error_messages(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("plain text, not spans\n")
    done = run_cli("import", "token", "-o", "e.sftrace", cwd=tmp_path)
    assert done.code == 2
    assert "[REDACTED]" not in done.err
    assert "token: neither" in done.err
    for command in (["inspect"], ["replay", "-e", "agent:run"]):
        done = run_cli(*command, "secret:abc", cwd=tmp_path)
        assert done.code == 2
        assert "[REDACTED]" not in done.err
        assert done.err.count("secret:abc") == 2
    # a secret in the message that is not the typed path is still redacted
    from stepfork.cli.output import sanitize_text

    text = "secret:abc: token: sk-abcdefghijklmnopqrstuvwxyz012345 password=hunter2hunter2"
    cleaned = sanitize_text(text, keep=["secret:abc"])
    assert cleaned.startswith("secret:abc: ")
    assert "sk-abcdefghij" not in cleaned
    assert "hunter2" not in cleaned


def test_export_and_replay_of_a_program_that_is_not_python_say_what_was_wrong(tmp_path: Path) -> None:
    bundle = _record(tmp_path / "run.sftrace", agent="agent", answer="sunny")
    done = run_cli("export", bundle, "-o", tmp_path / "t3.py", "--", "node", "agent.js")
    assert done.code == 2
    assert done.err.strip() == (
        "stepfork export BUNDLE -- python SCRIPT ARGS... exports a test of a Python program: "
        "the command starts with 'node', which is not a Python interpreter"
    )
    assert not (tmp_path / "t3.py").exists()
    done = run_cli("replay", bundle, "--", "python")
    assert done.code == 2
    assert done.err.strip().endswith("python is given no SCRIPT (or -m MODULE) to run")
