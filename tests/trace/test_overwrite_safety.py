"""``overwrite=True`` replaces a bundle, never a user's directory (issue 14, data-safety bug).

A directory named ``notes.sftrace`` holding ``notes.txt`` used to be wiped by ``Trace.save(path,
overwrite=True)``. Every writer of bundles goes through the same check (``_files.check_target``): the save
and the incremental writer (``record``, so ``fork`` and the pytest plugin) refuse it with a line naming
what is there, and leave it untouched.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepfork.trace import Trace, TraceStorageError, record, trace_tool
from stepfork.trace.bundle import bundle_replace_problem


def _user_dir(tmp_path: Path) -> Path:
    notes = tmp_path / "notes.sftrace"
    notes.mkdir()
    (notes / "notes.txt").write_text("my notes\n")
    return notes


def test_save_with_overwrite_refuses_a_directory_that_is_not_a_bundle(tmp_path: Path) -> None:
    notes = _user_dir(tmp_path)
    with pytest.raises(TraceStorageError) as info:
        Trace(run_id="run_1", agent_name="a").save(notes, overwrite=True)
    assert info.value.code == "not_a_bundle"
    assert "notes.txt" in str(info.value)
    assert "not a Stepfork bundle" in str(info.value)
    assert (notes / "notes.txt").read_text() == "my notes\n"
    assert sorted(p.name for p in notes.iterdir()) == ["notes.txt"]


def test_a_directory_with_a_manifest_and_user_files_is_not_replaced(tmp_path: Path) -> None:
    bundle = Trace(run_id="run_1", agent_name="a").save(tmp_path / "b.sftrace")
    (bundle / "draft.txt").write_text("mine")
    (bundle / "sub").mkdir()
    problem = bundle_replace_problem(bundle)
    assert problem is not None
    assert "draft.txt" in problem
    assert "sub" in problem
    with pytest.raises(TraceStorageError, match=r"draft\.txt"):
        Trace(run_id="run_2", agent_name="a").save(bundle, overwrite=True)
    assert (bundle / "draft.txt").read_text() == "mine"


def test_overwrite_still_replaces_a_bundle(tmp_path: Path) -> None:
    target = Trace(run_id="run_1", agent_name="a").save(tmp_path / "b.sftrace")
    assert bundle_replace_problem(target) is None
    Trace(run_id="run_2", agent_name="a").save(target, overwrite=True)
    assert Trace.load(target).run_id == "run_2"


def test_record_with_overwrite_refuses_a_user_directory_before_the_agent_runs(tmp_path: Path) -> None:
    notes = _user_dir(tmp_path)
    ran: list[str] = []

    @trace_tool
    def tool() -> str:
        ran.append("tool")
        return "x"

    with pytest.raises(TraceStorageError, match=r"notes\.txt"), record("a", output=notes, overwrite=True):
        tool()
    assert ran == []
    assert sorted(p.name for p in notes.iterdir()) == ["notes.txt"]


def test_a_symlinked_entry_makes_the_directory_not_a_bundle(tmp_path: Path) -> None:
    target = Trace(run_id="run_1", agent_name="a").save(tmp_path / "b.sftrace")
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    (target / "extra.json").symlink_to(outside)
    assert bundle_replace_problem(target) is not None


def test_a_json_directory_without_events_is_not_a_bundle(tmp_path: Path) -> None:
    config = tmp_path / "config.sftrace"
    config.mkdir()
    (config / "manifest.json").write_text("{}")
    (config / "settings.json").write_text("{}")
    problem = bundle_replace_problem(config)
    assert problem is not None
    assert "events.jsonl" in problem
    with pytest.raises(TraceStorageError, match="not a Stepfork bundle"):
        Trace(run_id="run_1", agent_name="a").save(config, overwrite=True)
    assert sorted(p.name for p in config.iterdir()) == ["manifest.json", "settings.json"]
