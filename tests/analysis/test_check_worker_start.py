"""What a ``check`` batch worker starts from is taken once, in the zygote before it forks
(``_check_batch.prepare``): the resolved entrypoint, the agent's module names and the state baseline. Taken
in each worker instead, it read every loaded module again and copied ~580 of the zygote's pages per fork.

The verdicts that rest on the baseline (a replay that changes the agent's state sends the next bundle to a
fresh worker) are checked end to end in tests/analysis/test_check_isolation.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis.check import _batch as _check_batch
from stepfork.analysis.check._batch import BatchWorker, ImportWatch, prepare
from stepfork.replay import network


def _not_again(config: dict[str, Any]) -> Any:
    raise AssertionError("a worker took its start again after the zygote prepared it")


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A check configuration whose entrypoint is a standard module's (nothing imported into this test
    process from a temporary directory); ``prepare`` is undone after the test, and it does not seal this
    process's network for good as it seals a zygote's (tests/replay/test_network_seal_process.py)."""
    monkeypatch.setattr(_check_batch, "_prepared", None)
    monkeypatch.setattr(network, "seal_process", lambda: None)
    return {"entrypoint": "json:dumps", "import_root": str(tmp_path), "isolation": "worker"}


def _worker(config: dict[str, Any]) -> BatchWorker:
    worker = BatchWorker(config)
    sys.meta_path.remove(worker.watch)  # a forked worker's finder: not this test process's
    return worker


def test_a_worker_starts_from_what_the_zygote_prepared(config, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare(config)
    monkeypatch.setattr(_check_batch._Start, "of", staticmethod(_not_again))
    worker = _worker(config)
    assert _check_batch._prepared is not None
    start = _check_batch._prepared[1]
    assert worker.baseline is start.baseline is not None
    assert worker.names is start.names
    assert worker.targets is start.targets
    assert worker.targets is not None
    assert worker.targets[0] is json.dumps


def test_a_worker_of_another_configuration_takes_its_own(config) -> None:
    prepare(config)
    other = {**config, "isolation": "bundle"}  # not the object the zygote prepared
    worker = _worker(other)
    assert worker.baseline is None  # a fork per bundle: no baseline, whatever was prepared
    assert worker.targets is not None


def test_an_entrypoint_that_cannot_be_resolved_leaves_each_verdict_to_say_so(
    config, monkeypatch: pytest.MonkeyPatch
) -> None:
    config["entrypoint"] = "json:no_such_function"
    prepare(config)
    # prepared all the same (no targets, the baseline taken): the worker does not take its start again
    monkeypatch.setattr(_check_batch._Start, "of", staticmethod(_not_again))
    worker = _worker(config)
    assert worker.targets is None  # each verdict_of resolves, and fails, per bundle
    assert worker.baseline is not None


def test_the_zygotes_module_names_are_read_not_copied_after_each_replay(tmp_path: Path) -> None:
    # the names a worker starts with are the zygote's (thousands with an SDK loaded): a copy after each
    # replay that imported nothing touched every name, ~1,000 pages copied on write in each fresh worker
    known = frozenset(sys.modules)
    watch = ImportWatch(known)
    watch.install()
    sys.path.insert(0, str(tmp_path))
    try:
        assert watch.new_modules() == []
        assert watch.known is known
        (tmp_path / "stepfork_watched_module.py").write_text("VALUE = 1\n")
        __import__("stepfork_watched_module")
        assert watch.new_modules() == ["stepfork_watched_module"]
    finally:
        sys.meta_path.remove(watch)
        sys.path.remove(str(tmp_path))
        sys.modules.pop("stepfork_watched_module", None)
    assert "stepfork_watched_module" in watch.known
    assert "stepfork_watched_module" not in known  # the zygote's set is never changed in place
