"""Where the CLI may write its outputs, through the real CLI (one rule: stepfork.trace._outputs).

`check --junit/--receipts` are checked before any replay (an existing non-Stepfork file is kept without
--overwrite, a directory is no JUnit file, nothing goes inside a bundle); no HTML page (view -o, replay
--html, minimize --html) goes inside a bundle directory even with --overwrite; `view` of a bundle URL
writes `<name>.html` in the current directory; `upload` removes only a recorder's spool.

Each command's refusals and exit codes come from the real ``stepfork``; further cells of a matrix and
repeats of the same command with another value run the console script's ``main`` in-process.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import InProcess, run_cli

_INSIDE = "is inside the bundle directory"


def _tree(bundle: Path) -> dict[str, bytes]:
    return {str(p.relative_to(bundle)): p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file()}


# --- 1. check --junit / --receipts -------------------------------------------------------------------


def test_check_keeps_a_users_file_named_as_junit_unless_overwrite(quickstart: Path) -> None:
    script = quickstart / "script.py"
    script.write_text("print('mine')\n")
    refused = run_cli(
        "check", "notify.sftrace", "-e", "quickstart:run_agent", "--junit", "script.py", cwd=quickstart
    )
    assert refused.code == 2
    assert refused.err == (
        "refusing to write the JUnit report to script.py: it exists and is not a Stepfork JUnit report; "
        "pass --overwrite to replace it\n"
    )
    assert "Status" not in refused.out  # refused before any replay
    assert script.read_text() == "print('mine')\n"

    forced = run_cli(
        "check",
        "notify.sftrace",
        "-e",
        "quickstart:run_agent",
        "--junit",
        "script.py",
        "--overwrite",
        cwd=quickstart,
    )
    assert forced.code == 0, forced.text
    assert "<testsuites>" in script.read_text()


def test_check_replaces_its_own_junit_and_receipts(quickstart: Path) -> None:
    args = ("check", "notify.sftrace", "-e", "quickstart:run_agent", "--junit", "j.xml", "--receipts", "rc")
    first = run_cli(*args, cwd=quickstart)
    assert first.code == 0, first.text
    again = run_cli(*args, cwd=quickstart)
    assert again.code == 0, again.text
    (receipt,) = (quickstart / "rc").iterdir()
    receipt.write_text("not a receipt\n")
    refused = run_cli(*args, cwd=quickstart)
    assert refused.code == 2
    assert "it exists and is not a Stepfork receipt; pass --overwrite" in refused.err
    assert receipt.read_text() == "not a receipt\n"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--receipts", "notify.sftrace/r", _INSIDE),
        ("--junit", "notify.sftrace/j.xml", _INSIDE),
        ("--junit", "notify.sftrace/events.jsonl", _INSIDE),
        ("--junit", "outdir", "it is a directory"),
        ("--receipts", "afile", "it exists and is not a directory"),
    ],
)
def test_check_refuses_a_bad_output_before_any_replay(
    quickstart: Path, option: str, value: str, message: str, in_process: InProcess
) -> None:
    stepfork = run_cli if value == "notify.sftrace/r" else in_process  # the first cell: the real executable
    (quickstart / "outdir").mkdir()
    (quickstart / "afile").write_text("x")
    before = _tree(quickstart / "notify.sftrace")
    done = stepfork(
        "check", "notify.sftrace", "-e", "quickstart:run_agent", option, value, "--overwrite", cwd=quickstart
    )
    assert done.code == 2
    assert done.err.count("\n") == 1
    assert message in done.err
    assert "Traceback" not in done.err
    assert done.out == ""  # no verdict was computed, so none is lost
    assert _tree(quickstart / "notify.sftrace") == before


# --- 2. HTML outputs never inside a bundle --------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ("view", "notify.sftrace", "-o", "notify.sftrace/manifest.json", "--overwrite"),
        ("view", "notify.sftrace", "-o", "v2.sftrace/x.html"),
        ("view", "notify.sftrace", "-o", "plain/x.html", "--overwrite"),  # plain holds manifest.json
        (
            "replay",
            "notify.sftrace",
            "-e",
            "quickstart:run_agent",
            "--html",
            "notify.sftrace/events.jsonl",
            "--overwrite",
        ),
        (
            "minimize",
            "notify.sftrace",
            "-e",
            "quickstart:run_agent",
            "--html",
            "notify.sftrace/m.html",
            "--overwrite",
        ),
    ],
)
def test_an_html_page_is_never_written_into_a_bundle(
    quickstart: Path, command: tuple[str, ...], in_process: InProcess
) -> None:
    # one cell per command through the real executable (view's first, replay, minimize)
    real = command[0] != "view" or command[3] == "notify.sftrace/manifest.json"
    stepfork = run_cli if real else in_process
    (quickstart / "v2.sftrace").mkdir()
    shutil.copytree(quickstart / "notify.sftrace", quickstart / "plain")
    before = _tree(quickstart / "notify.sftrace")
    done = stepfork(*command, cwd=quickstart)
    assert done.code == 2, done.text
    assert done.err.startswith("refusing to write the HTML report to ")
    assert _INSIDE in done.err
    assert done.err.count("\n") == 1
    assert _tree(quickstart / "notify.sftrace") == before
    assert list((quickstart / "v2.sftrace").iterdir()) == []
    assert not (quickstart / "plain" / "x.html").exists()


def test_run_receipt_refuses_any_bundle_not_only_its_own(quickstart: Path) -> None:
    shutil.copytree(quickstart / "notify.sftrace", quickstart / "other.sftrace")
    exported = run_cli(
        "export", "notify.sftrace", "-e", "quickstart:run_agent", "-o", "test_n.py", cwd=quickstart
    )
    assert exported.code == 0, exported.text
    done = run_cli("run", "test_n.py", "--receipt", "other.sftrace/r.json", "--overwrite", cwd=quickstart)
    assert done.code == 2
    assert _INSIDE in done.err
    assert not (quickstart / "other.sftrace" / "r.json").exists()


# --- 3 and 4 need fsspec (file:// URLs) ------------------------------------------------------------


def test_view_of_a_url_bundle_writes_name_html_in_the_current_directory(
    quickstart: Path, tmp_path: Path
) -> None:
    pytest.importorskip("fsspec")
    here = tmp_path / "here"
    here.mkdir()
    url = f"file://{quickstart}/notify.sftrace"
    done = run_cli("view", url, cwd=here)
    assert done.code == 0, done.text
    assert done.out == "Wrote notify.html\n"
    assert [p.name for p in here.iterdir()] == ["notify.html"]  # no ./file:/... tree
    missing = run_cli("inspect", f"file://{quickstart}/nothere.sftrace", cwd=here)
    assert missing.code == 2
    assert f"Unreadable bundle file://{quickstart}/nothere.sftrace:" in missing.err  # the URL as given


def test_upload_keeps_an_ordinary_bundle_and_removes_only_a_spool(
    quickstart: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_process: InProcess
) -> None:
    """upload's exits 0 and 2 through the real executable; the spool and --remove-local in-process."""
    pytest.importorskip("fsspec")
    spool_root = tmp_path / "spool"
    monkeypatch.setenv("STEPFORK_SPOOL_DIR", str(spool_root))
    store = tmp_path / "store"

    kept = run_cli("upload", "notify.sftrace", f"file://{store}/up1.sftrace", cwd=quickstart)
    assert kept.code == 0, kept.text
    assert "(local copy kept)" in kept.out
    assert (quickstart / "notify.sftrace" / "integrity.json").is_file()
    assert (store / "up1.sftrace" / "integrity.json").is_file()

    spool = spool_root / "run_1" / "up2.sftrace"
    shutil.copytree(quickstart / "notify.sftrace", spool)
    removed = in_process("upload", spool, f"file://{store}/up2.sftrace", cwd=quickstart)
    assert removed.code == 0, removed.text
    assert "(local copy removed)" in removed.out
    assert not spool.exists()

    shutil.copytree(quickstart / "notify.sftrace", quickstart / "mine.sftrace")
    asked = in_process(
        "upload", "mine.sftrace", f"file://{store}/up3.sftrace", "--remove-local", cwd=quickstart
    )
    assert asked.code == 0, asked.text
    assert not (quickstart / "mine.sftrace").exists()

    missing = run_cli("upload", "nothere.sftrace", f"file://{store}/up4.sftrace", cwd=quickstart)
    assert missing.code == 2
    assert missing.err == "Cannot upload nothere.sftrace: no such bundle\n"
    assert not (store / "up4.sftrace").exists()


# --- run --receipts DIR and what counts as a bundle ----------------------------------------------------

_EXPORTED_SHAPE = 'TRACE_PATH = "gone.sftrace"\n\n\ndef test_case():\n    run_regression_case(TRACE_PATH)\n'


def test_run_receipts_dir_follows_the_one_output_rule_before_any_test_runs(
    quickstart: Path, in_process: InProcess
) -> None:
    for name in ("test_a.py", "test_b.py"):
        (quickstart / name).write_text(_EXPORTED_SHAPE)
    into_bundle = run_cli("run", "test_a.py", "test_b.py", "--receipts", "out.sftrace", cwd=quickstart)
    assert into_bundle.code == 2, into_bundle.text
    assert into_bundle.err.startswith("refusing to write the receipts to out.sftrace: ")
    assert _INSIDE in into_bundle.err
    assert into_bundle.err.count("\n") == 1
    assert into_bundle.out == ""  # refused before any test ran
    assert not (quickstart / "out.sftrace").exists()
    (quickstart / "afile").write_text("mine\n")
    into_file = in_process("run", "test_a.py", "test_b.py", "--receipts", "afile", cwd=quickstart)  # as above
    assert into_file.code == 2
    assert into_file.err == "refusing to write the receipts to afile: it exists and is not a directory\n"


def test_a_users_folder_holding_a_manifest_json_is_not_taken_for_a_bundle(quickstart: Path) -> None:
    """A web app's folder has a manifest.json too; a bundle also has events.jsonl (or a .sftrace name)."""
    webapp = quickstart / "webapp"
    webapp.mkdir()
    (webapp / "manifest.json").write_text('{"name": "my app", "start_url": "/"}\n')
    viewed = run_cli("view", "notify.sftrace", "-o", "webapp/run.html", cwd=quickstart)
    assert viewed.code == 0, viewed.text
    assert (webapp / "run.html").is_file()
    (quickstart / "test_a.py").write_text(_EXPORTED_SHAPE)
    ran = run_cli("run", "test_a.py", "test_a.py", "--receipts", "webapp/receipts", cwd=quickstart)
    assert "refusing" not in ran.err, ran.text
    assert len(list((webapp / "receipts").glob("test_a-*.json"))) == 1
