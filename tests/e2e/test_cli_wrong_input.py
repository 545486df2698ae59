"""The wrong kind of input gets one clear line and the documented exit code (2: invalid input; spec
cli-reference "Exit code conventions"), never a traceback or a message about something else: a Python file
given to ``check``, a test given to ``export``, a bundle given to ``import``, a plain pytest file given
to ``run`` with other tests."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import run_cli

PLAIN = "def test_sum():\n    assert 1 + 1 == 2\n"


def test_check_given_a_python_file_says_it_is_not_a_corpus(quickstart: Path) -> None:
    (quickstart / "test_plain.py").write_text(PLAIN)
    for extra in ((), ("-e", "quickstart:run_agent")):  # said first, also before a missing --entrypoint
        done = run_cli("check", "test_plain.py", *extra, cwd=quickstart)
        assert done.code == 2, done.text
        assert done.err == (
            "Invalid corpus: test_plain.py is a Python file, not a corpus: `stepfork check` takes a "
            "directory of bundles, a glob, a file listing *.sftrace bundles or a URL prefix; to run an "
            "exported test use `stepfork run`\n"
        )
        assert done.out == ""
    (quickstart / "runs.txt").write_text("notify.sftrace\nprint('x')\n")
    listed = run_cli("check", "runs.txt", "-e", "quickstart:run_agent", cwd=quickstart)
    assert listed.code == 2
    assert listed.err.startswith("Invalid corpus: ")
    assert "runs.txt:2: \"print('x')\" is not a bundle path" in listed.err
    assert listed.err.count("\n") == 1


def test_export_given_a_test_says_it_is_not_a_bundle(quickstart: Path) -> None:
    exported = run_cli(
        "export", "notify.sftrace", "-e", "quickstart:run_agent", "-o", "test_n.py", cwd=quickstart
    )
    assert exported.code == 0, exported.text
    done = run_cli("export", "test_n.py", "-e", "quickstart:run_agent", "-o", "test_m.py", cwd=quickstart)
    assert done.code == 2, done.text
    assert done.err == (
        "test_n.py is a test `stepfork export` wrote, not a bundle: `stepfork export` takes the .sftrace "
        "bundle directory a recording wrote (`stepfork run test_n.py` runs the test)\n"
    )
    assert not (quickstart / "test_m.py").exists()
    script = run_cli("export", "quickstart.py", "-e", "quickstart:run_agent", cwd=quickstart)
    assert script.code == 2
    assert script.err.startswith("quickstart.py is a Python file, not a bundle: ")


def test_import_given_a_bundle_says_it_is_not_spans(quickstart: Path) -> None:
    for given in ("notify.sftrace", "notify.sftrace/events.jsonl"):
        done = run_cli("import", given, "-o", "copy.sftrace", cwd=quickstart)
        assert done.code == 2, done.text
        assert done.err.startswith(f"{given} is ")
        assert "Stepfork bundle" in done.err
        assert "not OpenTelemetry spans" in done.err
        assert done.err.count("\n") == 1
    assert not (quickstart / "copy.sftrace").exists()


def test_run_given_plain_pytest_files_says_they_hold_no_stepfork_test(quickstart: Path) -> None:
    (quickstart / "test_plain.py").write_text(PLAIN)
    (quickstart / "test_other.py").write_text(PLAIN)
    done = run_cli("run", "test_plain.py", "test_other.py", cwd=quickstart)
    assert done.code == 2, done.text
    assert "COULD_NOT_EXECUTE  test_plain.py (not_exported)" in done.out
    assert "bundle_missing" not in done.out
    assert "not_exported: 2 file(s) are not tests `stepfork export` wrote" in done.out
    as_json = run_cli("run", "test_plain.py", "test_other.py", "--json", cwd=quickstart)
    receipt = json.loads(as_json.out)["receipts"][0]
    assert (receipt["verdict"], receipt["reason"]) == ("could_not_execute", "not_exported")
    assert "is not a test `stepfork export` wrote" in receipt["detail"]
    one = run_cli("run", "test_plain.py", cwd=quickstart)  # the one-test form: refused in one line
    assert one.code == 2
    assert one.err.startswith("test_plain.py is not a test `stepfork export` wrote")
