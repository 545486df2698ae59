"""``stepfork export`` refuses what would make a test that can never run, and writes files like any tool.

- An entrypoint without the ``MODULE:FUNCTION`` form is refused with replay's own two lines (the check is
  shared; nothing is imported).
- A bundle that fails integrity verification (the replay would reject it) is refused, exit 2; a legacy
  bundle without integrity.json still exports (docs/decisions.md).
- The written test gets ``0o666 & ~umask``; ``--overwrite`` keeps the replaced file's mode.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import file_mode, umask
from .conftest import GOLDEN, Result, run_cli


def export_quickstart(cwd: Path, *args: str) -> Result:
    """``stepfork export notify.sftrace --pytest --entrypoint quickstart:run_agent ARGS`` in ``cwd``."""
    command = ("export", "notify.sftrace", "--pytest", "--entrypoint", "quickstart:run_agent")
    return run_cli(*command, *args, cwd=cwd)


MALFORMED = [
    "quickstart",
    "a b:c d",
    ":run_agent",
    "quickstart:",
    "quickstart:run agent",
    "quickstart:run_agent:",
    "quick..start:run_agent",
    "quickstart:run_agent.",
    "../quickstart:run_agent",
    "quickstart:run_agent'); import os #",
]


@pytest.fixture
def umask_022() -> Iterator[None]:
    """A known umask for this process and its children, restored afterwards."""
    with umask(0o022):
        yield


@pytest.mark.parametrize("entrypoint", MALFORMED)
def test_a_malformed_entrypoint_is_refused_with_the_words_replay_uses(
    quickstart: Path, entrypoint: str
) -> None:
    exported = run_cli(
        "export", "notify.sftrace", "--pytest", "--entrypoint", entrypoint, "--output", "t.py", cwd=quickstart
    )
    replayed = run_cli("replay", "notify.sftrace", "--entrypoint", entrypoint, cwd=quickstart)
    assert (exported.code, replayed.code) == (2, 2), exported.text + replayed.text
    assert exported.err == replayed.err
    assert exported.err == (
        "Unable to resolve entrypoint.\n"
        f"invalid entrypoint {entrypoint!r}; expected the form MODULE:FUNCTION\n"
    )
    assert exported.out == ""
    assert not (quickstart / "t.py").exists()


def test_a_well_formed_entrypoint_is_not_imported_at_export_time(quickstart: Path) -> None:
    # a module that does not exist yet is fine: export names it, the test imports it when it runs
    result = run_cli(
        "export",
        "notify.sftrace",
        "--pytest",
        "--entrypoint",
        "later.agent:run",
        "--output",
        "t.py",
        cwd=quickstart,
    )
    assert result.code == 0, result.text
    assert "ENTRYPOINT = 'later.agent:run'" in (quickstart / "t.py").read_text(encoding="utf-8")


def test_a_tampered_bundle_is_refused_with_the_integrity_line(quickstart: Path) -> None:
    events = quickstart / "notify.sftrace" / "events.jsonl"
    events.write_text(events.read_text(encoding="utf-8").replace('"FedEx"', '"UPS"'), encoding="utf-8")
    assert run_cli("validate", "notify.sftrace", "--verify-integrity", cwd=quickstart).code == 1
    result = export_quickstart(quickstart, "--output", "t.py")
    assert result.code == 2, result.text
    assert result.err == (
        "notify.sftrace/events.jsonl does not match its digest in integrity.json: the bundle changed after "
        "it was written and is refused; run `stepfork validate --verify-integrity notify.sftrace`\n"
    )
    assert not (quickstart / "t.py").exists()


def test_a_changed_integrity_file_alone_is_refused_too(quickstart: Path) -> None:
    integrity = quickstart / "notify.sftrace" / "integrity.json"
    record = json.loads(integrity.read_text(encoding="utf-8"))
    digest = record["files"]["redactions.json"]
    record["files"]["redactions.json"] = ("1" if digest[0] == "0" else "0") + digest[1:]
    integrity.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    result = export_quickstart(quickstart)
    assert result.code == 2, result.text
    assert result.err.startswith("notify.sftrace/redactions.json does not match its digest in integrity.json")


def test_a_legacy_bundle_without_integrity_metadata_still_exports(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "legacy_v01.sftrace", tmp_path / "legacy.sftrace")
    result = run_cli(
        "export", "legacy.sftrace", "--pytest", "--entrypoint", "agent:run", "--output", "t.py", cwd=tmp_path
    )
    assert result.code == 0, result.text
    assert (tmp_path / "t.py").is_file()


@pytest.mark.usefixtures("umask_022")
def test_a_new_test_file_gets_the_umask_mode_not_0600(quickstart: Path) -> None:
    result = export_quickstart(quickstart, "--output", "new/t.py")
    assert result.code == 0, result.text
    assert file_mode(quickstart / "new" / "t.py") == 0o644


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o755])
def test_overwrite_keeps_the_mode_of_the_replaced_file(quickstart: Path, mode: int) -> None:
    target = quickstart / "t.py"
    target.write_text("# mine\n", encoding="utf-8")
    target.chmod(mode)
    result = export_quickstart(quickstart, "--output", "t.py", "--overwrite")
    assert result.code == 0, result.text
    assert "run_regression_case" in target.read_text(encoding="utf-8")
    assert file_mode(target) == mode


def test_overwrite_never_replaces_something_that_is_not_a_regular_file(quickstart: Path) -> None:
    # os.replace over a FIFO or device swaps out its directory entry (for root, /dev/null itself)
    os.mkfifo(quickstart / "pipe.py")
    result = export_quickstart(quickstart, "--output", "pipe.py", "--overwrite")
    assert result.code == 1, result.text
    assert result.err.strip() == (
        "cannot write pipe.py: pipe.py exists and is not a regular file; it is not replaced"
    )
    assert stat.S_ISFIFO(os.lstat(quickstart / "pipe.py").st_mode)
