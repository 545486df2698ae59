"""The library never writes a bundle inside another bundle (docs/cli.md "Where outputs may go"):
``save_trace``/``Trace.save`` and ``record(output=...)`` raise ``TraceStorageError`` ``invalid_path``
and leave the parent bundle untouched; a sibling path is written as before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stepfork.trace import Trace, record
from stepfork.trace.errors import TraceStorageError

from ..conftest import GOLDEN


def _tree(bundle: Path) -> dict[str, bytes]:
    return {str(p.relative_to(bundle)): p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file()}


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    bundle = tmp_path / "parent.sftrace"
    shutil.copytree(GOLDEN / "successful_run.sftrace", bundle)
    return bundle


@pytest.mark.parametrize("inner", ["child.sftrace", "deeper/child.sftrace"])
def test_save_refuses_a_bundle_inside_a_bundle(parent: Path, inner: str) -> None:
    before = _tree(parent)
    trace = Trace.load(parent)
    with pytest.raises(TraceStorageError, match="is inside the bundle directory") as info:
        trace.save(parent / inner, overwrite=True)
    assert info.value.code == "invalid_path"
    assert _tree(parent) == before
    assert trace.save(parent.with_name("sibling.sftrace")).is_dir()  # beside it: as before


def test_save_refuses_through_a_symlink_to_a_bundle(parent: Path) -> None:
    link = parent.with_name("link")
    link.symlink_to(parent.name)
    with pytest.raises(TraceStorageError, match="is inside the bundle directory"):
        Trace.load(parent).save(link / "child.sftrace")
    assert not (parent / "child.sftrace").exists()


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_bundle_path_that_is_a_symlink_is_named_as_one(parent: Path, overwrite: bool) -> None:
    link = parent.with_name("link.sftrace")
    link.symlink_to(parent.name)
    before = _tree(parent)
    with pytest.raises(TraceStorageError, match=r"bundle path is a symbolic link: .*link\.sftrace") as info:
        Trace.load(parent).save(link, overwrite=overwrite)
    assert info.value.code == "invalid_path"
    assert "give the bundle's real path" in str(info.value)
    assert _tree(parent) == before
    assert link.is_symlink()


def test_record_refuses_a_bundle_inside_a_bundle(parent: Path) -> None:
    before = _tree(parent)
    with (
        pytest.raises(TraceStorageError, match="is inside the bundle directory"),
        record("agent", output=parent / "in.sftrace"),
    ):
        pass
    assert _tree(parent) == before
