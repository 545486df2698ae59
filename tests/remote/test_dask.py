"""`stepfork check --dask`: the replays run as tasks on a distributed.LocalCluster (worker processes on this
machine) through ``Client.get_executor()``, with verdicts identical to the local run (issue 17)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import cli


@pytest.fixture(scope="module")
def cluster(s3: str) -> Iterator[str]:
    """A LocalCluster of two worker processes (started after the S3 endpoint is in the environment, which
    they inherit); yields the scheduler's address."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as local:
        yield local.scheduler_address


def _verdicts(stdout: str) -> dict[str, str]:
    return {v["bundle"]: v["verdict"] for v in json.loads(stdout)["verdicts"]}


def test_dask_verdicts_are_the_local_ones(cluster: str, corpus_module: ModuleType, work: Path) -> None:
    expected = corpus_module.make_corpus(work / "dask-corpus", 20, diverge_every=5)
    args = ("check", "dask-corpus", "--entrypoint", "quickstart:run_agent", "--json")
    on_dask = cli(*args, "--dask", cluster, cwd=work)
    assert on_dask.returncode == 1, on_dask.stdout + on_dask.stderr
    local = cli(*args, cwd=work)
    assert local.returncode == 1, local.stdout + local.stderr
    assert _verdicts(on_dask.stdout) == _verdicts(local.stdout)
    assert {str(work / b): v for b, v in _verdicts(on_dask.stdout).items()} == expected
    report = json.loads(on_dask.stdout)
    assert report["executor"] == f"dask ({cluster})"
    local_hosts = {v["host"] for v in json.loads(local.stdout)["verdicts"]}
    assert not {v["host"] for v in report["verdicts"]} & local_hosts  # run by the workers, not the CLI


def test_dask_checks_a_corpus_in_s3(cluster: str, s3: str, recorded: dict[str, str], work: Path) -> None:
    done = cli(
        "check", f"{s3}/runs/", "--entrypoint", "quickstart:run_agent", "--json", "--dask", cluster, cwd=work
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert _verdicts(done.stdout) == recorded


def test_an_unreachable_scheduler_is_one_line_and_exit_2(work: Path) -> None:
    done = cli(
        "check",
        "dask-corpus",
        "--entrypoint",
        "quickstart:run_agent",
        "--dask",
        "tcp://127.0.0.1:9",
        cwd=work,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "Dask scheduler" in done.stderr
