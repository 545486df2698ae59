"""Extension files (extra files listed in integrity.json) read with the core files' rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stepfork.trace import TraceStorageError, record
from stepfork.trace.bundle import read_extension


def _bundle(tmp_path: Path) -> Path:
    path = tmp_path / "ext.sftrace"
    with record("ext", output=path) as session:
        session.add_metadata("sdk-versions", {"openai": "3.1.0"})
    return path


def test_an_extension_file_reads_back_and_an_absent_one_is_none(tmp_path: Path) -> None:
    path = _bundle(tmp_path)
    assert read_extension(path, "sdk-versions") == {"openai": "3.1.0"}
    assert read_extension(path, "fork") is None


def test_a_symlinked_extension_file_is_refused(tmp_path: Path) -> None:
    path = _bundle(tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text('{"openai": "evil"}')
    os.remove(path / "sdk-versions.json")
    os.symlink(outside, path / "sdk-versions.json")
    with pytest.raises(TraceStorageError) as info:
        read_extension(path, "sdk-versions")
    assert info.value.code == "unsafe_path"


@pytest.mark.parametrize("name", ["../manifest", "manifest", "redactions", "", "a/b", "integrity"])
def test_names_outside_the_extension_space_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="not an extension file name"):
        read_extension(_bundle(tmp_path), name)


def test_a_dangling_symlinked_extension_file_is_refused_not_absent(tmp_path: Path) -> None:
    # absent means no directory entry at all (read_extension's quick check is lstat, not stat)
    path = _bundle(tmp_path)
    os.remove(path / "sdk-versions.json")
    os.symlink(tmp_path / "nowhere.json", path / "sdk-versions.json")
    with pytest.raises(TraceStorageError) as info:
        read_extension(path, "sdk-versions")
    assert info.value.code == "unsafe_path"
