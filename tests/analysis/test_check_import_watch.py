"""``ImportWatch``: the modules a batch worker's replay imported, told without copying ``sys.modules``
(``stepfork.analysis.check._batch``), whether the import system loaded them or code put them there by hand."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

from stepfork.analysis.check._batch import ImportWatch


@pytest.fixture
def watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ImportWatch:
    for name in ("watched_a", "watched_b"):
        (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))  # restored afterwards, with what we add
    importlib.invalidate_caches()
    watch = ImportWatch()
    watch.install()
    return watch


def test_modules_the_import_system_loads_are_reported_once(watch: ImportWatch) -> None:
    assert watch.new_modules() == []
    importlib.import_module("watched_a")
    importlib.import_module("json.tool")  # a submodule of a loaded package
    assert watch.new_modules() == ["json.tool", "watched_a"]
    importlib.import_module("watched_a")  # already loaded: nothing new
    assert watch.new_modules() == []


def test_a_failed_import_is_not_a_new_module(watch: ImportWatch) -> None:
    with pytest.raises(ImportError):
        importlib.import_module("watched_missing")
    assert watch.new_modules() == []


def test_modules_put_in_by_hand_are_found_by_comparing_every_name(watch: ImportWatch) -> None:
    sys.modules["handmade"] = types.ModuleType("handmade")
    assert watch.new_modules() == ["handmade"]


def test_a_deleted_module_and_an_import_in_one_replay(watch: ImportWatch) -> None:
    importlib.import_module("watched_a")
    assert watch.new_modules() == ["watched_a"]
    del sys.modules["watched_a"]
    importlib.import_module("watched_b")
    assert watch.new_modules() == ["watched_b"]
    importlib.import_module("watched_a")  # imported again after its deletion: new again
    assert watch.new_modules() == ["watched_a"]
