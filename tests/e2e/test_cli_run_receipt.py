"""``stepfork run --receipt``: where a receipt may be written, its file mode, and a tampered bundle.

The rules (docs/decisions.md, "`run --receipt` over an existing file"): an earlier receipt is replaced
(re-running CI); a missing parent directory is created (spec "run" example, ``receipts/notify.json``);
the test file, the bundle or a path inside it, a directory, or a path under a file are always refused; any
other existing file is refused unless ``--overwrite``. Every refusal is one line, exit 2, before pytest is
launched and before anything is written. A conftest.py beside the test leaves a marker file whenever pytest
starts, which is how these tests see that no run happened.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import file_mode, umask
from .conftest import QuickstartExport, run_cli

MARKER = "pytest-was-launched"


@pytest.fixture
def work(quickstart: Path, quickstart_export: QuickstartExport) -> Path:
    """The quickstart copy with an exported passing test and a conftest.py that marks a pytest launch."""
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    (quickstart / "conftest.py").write_text(
        f"from pathlib import Path\nPath(__file__).with_name({MARKER!r}).write_text('1')\n", encoding="utf-8"
    )
    return quickstart


@pytest.fixture
def umask_022() -> Iterator[None]:
    """A known umask for this process and its children, restored afterwards."""
    with umask(0o022):
        yield


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_passing_run_launches_pytest_which_the_refusal_tests_rely_on(work: Path) -> None:
    result = run_cli("run", "test_fixed.py", "--receipt", "receipts/fixed.json", cwd=work)
    assert result.code == 0, result.text
    assert (work / MARKER).is_file()
    assert json.loads((work / "receipts" / "fixed.json").read_text(encoding="utf-8"))["verdict"] == "passed"


def test_an_existing_file_that_is_not_a_receipt_is_refused_before_the_test_runs(work: Path) -> None:
    keep = work / "keep.py"
    keep.write_text("important = 1\n", encoding="utf-8")
    keep.chmod(0o644)
    result = run_cli("run", "test_fixed.py", "--receipt", "keep.py", cwd=work)
    assert result.code == 2, result.text
    assert result.err == (
        "refusing to write the receipt to keep.py: it exists and is not a Stepfork receipt; "
        "pass --overwrite to replace it\n"
    )
    assert result.out == ""
    assert keep.read_text(encoding="utf-8") == "important = 1\n"
    assert file_mode(keep) == 0o644
    assert not (work / MARKER).exists()


@pytest.mark.parametrize("content", ["", "not json\n", '{"verdict": "passed"}\n', "[1, 2]\n"])
def test_any_file_without_the_receipt_shape_counts_as_not_a_receipt(work: Path, content: str) -> None:
    (work / "other.json").write_text(content, encoding="utf-8")
    result = run_cli("run", "test_fixed.py", "--receipt", "other.json", cwd=work)
    assert result.code == 2, result.text
    assert "is not a Stepfork receipt" in result.err
    assert (work / "other.json").read_text(encoding="utf-8") == content


@pytest.mark.parametrize("spelling", ["test_fixed.py", "./test_fixed.py", "sub/../test_fixed.py", "link.py"])
def test_the_test_file_itself_is_always_refused_even_with_overwrite(work: Path, spelling: str) -> None:
    (work / "sub").mkdir()
    (work / "link.py").symlink_to("test_fixed.py")
    before = (work / "test_fixed.py").read_bytes()
    for extra in ([], ["--overwrite"]):
        result = run_cli("run", "test_fixed.py", "--receipt", spelling, *extra, cwd=work)
        assert result.code == 2, result.text
        assert result.err == f"refusing to write the receipt to {Path(spelling)}: it is the test file\n"
    assert (work / "test_fixed.py").read_bytes() == before
    assert not (work / MARKER).exists()


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("notify.sftrace", "it is the bundle the check reads"),
        ("notify.sftrace/events.jsonl", "it is inside the bundle the check reads"),
        ("notify.sftrace/receipt.json", "it is inside the bundle the check reads"),
        ("notify.sftrace/new/receipt.json", "it is inside the bundle the check reads"),
    ],
)
def test_the_bundle_and_paths_inside_it_are_always_refused(work: Path, target: str, why: str) -> None:
    before = _snapshot(work / "notify.sftrace")
    for extra in ([], ["--overwrite"]):
        result = run_cli("run", "test_fixed.py", "--receipt", target, *extra, cwd=work)
        assert result.code == 2, result.text
        assert result.err == f"refusing to write the receipt to {target}: {why}\n"
    assert _snapshot(work / "notify.sftrace") == before
    assert not (work / MARKER).exists()


def test_the_bundle_named_by_the_bundle_option_is_protected_too(work: Path) -> None:
    (work / "notify.sftrace").rename(work / "moved.sftrace")
    result = run_cli(
        "run", "test_fixed.py", "--bundle", "moved.sftrace", "--receipt", "moved.sftrace/r.json", cwd=work
    )
    assert result.code == 2, result.text
    assert "it is inside the bundle the check reads" in result.err
    assert not (work / "moved.sftrace" / "r.json").exists()


@pytest.mark.parametrize(
    ("target", "why"),
    [("receipts", "it is a directory"), ("keep.txt/r.json", "keep.txt is not a directory")],
)
def test_a_directory_or_a_path_under_a_file_is_refused_before_the_run(
    work: Path, target: str, why: str
) -> None:
    (work / "receipts").mkdir()
    (work / "keep.txt").write_text("x", encoding="utf-8")
    result = run_cli("run", "test_fixed.py", "--receipt", target, "--overwrite", cwd=work)
    assert result.code == 2, result.text
    assert result.err == f"refusing to write the receipt to {target}: {why}\n"
    assert not (work / MARKER).exists()


def test_an_earlier_receipt_is_replaced_without_overwrite_keeping_its_mode(work: Path) -> None:
    # the quick path (bundle missing: no pytest launch) writes a receipt like any other verdict
    first = run_cli("run", "test_fixed.py", "--bundle", "gone.sftrace", "--receipt", "r/x.json", cwd=work)
    assert first.code == 2, first.text
    receipt = work / "r" / "x.json"
    assert json.loads(receipt.read_text(encoding="utf-8"))["reason"] == "bundle_missing"
    receipt.chmod(0o640)
    second = run_cli("run", "test_fixed.py", "--receipt", "r/x.json", cwd=work)
    assert second.code == 0, second.text
    assert json.loads(receipt.read_text(encoding="utf-8"))["verdict"] == "passed"
    assert file_mode(receipt) == 0o640


def test_overwrite_replaces_a_file_that_is_not_a_receipt_and_keeps_its_mode(work: Path) -> None:
    notes = work / "notes.txt"
    notes.write_text("old notes\n", encoding="utf-8")
    notes.chmod(0o664)
    result = run_cli(
        "run", "test_fixed.py", "--bundle", "gone.sftrace", "--receipt", "notes.txt", "--overwrite", cwd=work
    )
    assert result.code == 2, result.text
    assert json.loads(notes.read_text(encoding="utf-8"))["receipt_version"] == 1
    assert file_mode(notes) == 0o664


def test_overwrite_without_receipt_is_bad_input(work: Path) -> None:
    result = run_cli("run", "test_fixed.py", "--overwrite", cwd=work)
    assert result.code == 2
    assert result.err == "--overwrite is only valid with --receipt.\n"
    assert not (work / MARKER).exists()


@pytest.mark.usefixtures("umask_022")
def test_a_new_receipt_gets_the_umask_mode_not_0600(work: Path) -> None:
    result = run_cli("run", "test_fixed.py", "--bundle", "gone.sftrace", "--receipt", "new.json", cwd=work)
    assert result.code == 2, result.text
    assert file_mode(work / "new.json") == 0o644


def test_a_tampered_bundle_is_could_not_execute_not_a_caught_regression(work: Path) -> None:
    events = work / "notify.sftrace" / "events.jsonl"
    events.write_text(events.read_text(encoding="utf-8").replace('"FedEx"', '"UPS"'), encoding="utf-8")
    result = run_cli("run", "test_fixed.py", "--json", cwd=work)
    assert result.code == 2, result.text
    receipt = json.loads(result.out)
    assert (receipt["verdict"], receipt["reason"], receipt["exit_status"]) == (
        "could_not_execute",
        "bundle_unreadable",
        None,
    )
    bundle = work.resolve() / "notify.sftrace"
    assert receipt["detail"] == (
        f"{bundle}/events.jsonl does not match its digest in integrity.json: the bundle changed after it "
        f"was written and is refused; run `stepfork validate --verify-integrity {bundle}`; "
        "the check cannot run, so this is not a regression"
    )
    assert not (work / MARKER).exists()


def test_a_receipt_never_replaces_something_that_is_not_a_regular_file(work: Path) -> None:
    os.mkfifo(work / "pipe.json")
    result = run_cli("run", "test_fixed.py", "--receipt", "pipe.json", "--overwrite", cwd=work)
    assert result.code == 2, result.text
    assert result.err == "refusing to write the receipt to pipe.json: it is not a regular file\n"
    assert stat.S_ISFIFO(os.lstat(work / "pipe.json").st_mode)
    assert not (work / MARKER).exists()
