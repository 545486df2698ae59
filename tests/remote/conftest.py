"""A real S3 API on 127.0.0.1 (moto's standalone server, started here) and a corpus of quickstart runs.

Runs in the ``remote`` hatch environment only (``hatch run remote:test``; tests/conftest.py ignores this
folder elsewhere). fsspec's s3fs reaches the server through ``FSSPEC_S3_ENDPOINT_URL``, which the
``stepfork`` subprocesses inherit.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart"
BUCKET = "stepfork-runs"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def s3() -> Iterator[str]:
    """moto's S3 server on a free port of 127.0.0.1 with an empty bucket; yields ``s3://<bucket>``."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = dict(os.environ)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint,
            "FSSPEC_S3_ENDPOINT_URL": endpoint,
        }
    )
    import fsspec

    fsspec.config.set_conf_env(fsspec.config.conf)  # pick FSSPEC_S3_* up in this process too
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    fs.mkdir(BUCKET)
    try:
        yield f"s3://{BUCKET}"
    finally:
        server.stop()
        os.environ.clear()
        os.environ.update(saved)


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding a copy of the quickstart agent (the entrypoint every check imports)."""
    work = tmp_path_factory.mktemp("remote")
    shutil.copy2(QUICKSTART / "quickstart.py", work / "quickstart.py")
    return work


@pytest.fixture(scope="session")
def corpus_module() -> ModuleType:
    """examples/quickstart/corpus.py (records quickstart runs into bundles)."""
    return _load("stepfork_example_corpus", QUICKSTART / "corpus.py")


def stepfork_executable() -> str:
    beside = Path(sys.executable).parent / "stepfork"
    return str(beside) if beside.exists() else "stepfork"


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``stepfork ARGS`` in ``cwd`` (this environment, with the S3 endpoint) and capture its output."""
    return subprocess.run(
        [stepfork_executable(), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="session")
def recorded(s3: str, corpus_module: ModuleType) -> dict[str, str]:
    """Six runs recorded straight to S3 (two for another order, which diverge): ``{url: verdict}``."""
    from stepfork import record

    agent = corpus_module.quickstart
    expected = {}
    for index in range(6):
        order = "ORD-1002" if index % 3 == 2 else "ORD-1001"
        # the other order records no run input, so replaying it through run_agent() diverges (corpus.py)
        run_input = {"order_id": order} if order == "ORD-1001" else None
        with record("notify-agent", output=f"{s3}/runs/{{run_id}}.sftrace", run_input=run_input) as run:
            run.set_output(agent.run_agent(order))
        assert run.upload_status == "uploaded", run.upload_status
        assert run.url is not None
        expected[run.url] = "DIVERGED" if order == "ORD-1002" else "MATCHED"
    return expected
