"""Bundles on URLs through fsspec (issue 17), on ``file://`` URLs: recording uploads integrity.json last,
readers refuse a bundle without it or with bytes that do not match it, an upload failure never breaks the
agent and ``stepfork upload`` finishes it, retention. The same paths against a real S3 API (moto) are in
tests/remote (``hatch run remote:test``).
"""

from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import QUICKSTART, run_cli

pytest.importorskip("fsspec")  # the hatch-test environment installs it (stepfork-trace[remote])


def _agent(work: Path):
    sys.path.insert(0, str(work))
    try:
        import quickstart
    finally:
        sys.path.remove(str(work))
    return quickstart


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "quickstart.py").write_text((QUICKSTART / "quickstart.py").read_text())
    monkeypatch.setenv("STEPFORK_SPOOL_DIR", str(tmp_path / "spool"))
    return tmp_path


def _record(work: Path, output: str, order: str = "ORD-1001", **options):
    from stepfork import record

    agent = _agent(work)
    # the other order records no run input, so replaying it through run_agent() diverges (as corpus.py)
    run_input = {"order_id": order} if order == "ORD-1001" else None
    with record("notify-agent", output=output, run_input=run_input, **options) as session:
        session.set_output(agent.run_agent(order))
    return session


def test_record_to_a_url_then_validate_replay_and_check_it(work: Path) -> None:
    store = work / "store"
    url = f"file://{store}/runs/{{run_id}}.sftrace"
    first = _record(work, url)
    second = _record(work, url, order="ORD-1002")
    assert first.upload_status == "uploaded"
    assert first.path is None
    assert not any((work / "spool").rglob("*.json"))  # the spool is gone once uploaded
    bundle = f"file://{store}/runs/{first.run_id}.sftrace"
    assert first.url == bundle
    assert sorted(p.name for p in (store / "runs" / f"{first.run_id}.sftrace").iterdir()) == [
        "concurrency.json",
        "events.jsonl",
        "integrity.json",
        "manifest.json",
        "minted.json",
        "redactions.json",
    ]
    assert first.trace is not None
    assert first.trace.run_id == first.run_id  # read back from the URL
    done = run_cli("validate", bundle, "--verify-integrity", cwd=work)
    assert (done.code, "Integrity verified" in done.out) == (0, True), done.text
    done = run_cli("replay", bundle, "--entrypoint", "quickstart:run_agent", cwd=work)
    assert done.code == 0, done.text
    assert "Recorded behavior: MATCHED" in done.out
    done = run_cli(
        "check", f"file://{store}/runs", "--entrypoint", "quickstart:run_agent", "--json", cwd=work
    )
    assert done.code == 1, done.text
    verdicts = {v["run_id"]: v["verdict"] for v in json.loads(done.out)["verdicts"]}
    assert verdicts == {first.run_id: "MATCHED", second.run_id: "DIVERGED"}


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_readers_refuse_an_incomplete_or_tampered_bundle(work: Path) -> None:
    store = work / "store"
    session = _record(work, f"file://{store}/{{run_id}}.sftrace")
    local = store / f"{session.run_id}.sftrace"
    url = f"file://{local}"
    events = local / "events.jsonl"
    original = events.read_bytes()
    events.write_bytes(original.replace(b"ORD-1001", b"ORD-1009", 1))
    done = run_cli("validate", url, cwd=work)  # as validate --verify-integrity of a local bundle: exit 1
    assert done.code == 1, done.text
    assert "integrity_mismatch" in done.text
    done = run_cli("replay", url, "--entrypoint", "quickstart:run_agent", cwd=work)
    assert done.code == 2, done.text
    assert "fails integrity verification" in done.err
    events.write_bytes(original)
    (local / "integrity.json").unlink()  # what an upload killed before its last file leaves
    done = run_cli("validate", url, cwd=work)
    assert done.code == 2, done.text
    assert "incomplete_bundle" in done.text
    done = run_cli("replay", url, "--entrypoint", "quickstart:run_agent", cwd=work)
    assert done.code == 2, done.text
    assert "incomplete bundle" in done.err
    done = run_cli("check", f"file://{store}", "--entrypoint", "quickstart:run_agent", "--json", cwd=work)
    assert done.code == 2, done.text
    (only,) = json.loads(done.out)["verdicts"]
    assert (only["verdict"], only["reason"]) == ("COULD NOT EXECUTE", "bundle_unreadable")
    assert "incomplete_bundle" in only["detail"]


def test_a_failed_upload_keeps_the_spool_and_stepfork_upload_finishes_it(
    work: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = work / "store"
    (work / "blocked").write_text("a file where the store's directory should be")
    with caplog.at_level(logging.WARNING, logger="stepfork.trace"):
        session = _record(work, f"file://{work}/blocked/{{run_id}}.sftrace")  # the agent is not broken
    assert session.upload_status == "spooled"
    assert session.path is not None
    spool = session.path
    assert (spool / "integrity.json").is_file()
    assert "stepfork upload" in caplog.text
    assert str(spool) in caplog.text
    target = f"file://{store}/{session.run_id}.sftrace"
    done = run_cli("upload", spool, target, cwd=work)
    assert done.code == 0, done.text
    assert not spool.exists()
    assert run_cli("validate", target, "--verify-integrity", cwd=work).code == 0
    done = run_cli("upload", work / "no-such.sftrace", target, cwd=work)
    assert done.code == 2
    assert "Traceback" not in done.err


def test_retention_keeps_failures_and_a_sampled_share(work: Path) -> None:
    from stepfork import record

    out = work / "runs"
    kept = _record(work, f"{out}/{{run_id}}.sftrace", keep="failures")
    assert kept.upload_status == "discarded"
    assert not any(out.iterdir())  # a discarded run leaves nothing behind
    agent = _agent(work)
    with pytest.raises(LookupError), record("notify-agent", output=f"{out}/failed.sftrace", keep="failures"):
        agent.run_agent("ORD-404")
    assert (out / "failed.sftrace" / "integrity.json").is_file()
    random.seed(17)
    sessions = [_record(work, f"{out}/{{run_id}}.sftrace", keep=0.5) for _ in range(20)]
    statuses = [s.upload_status for s in sessions]
    assert 0 < statuses.count("discarded") < 20
    assert len(list(out.glob("run_*.sftrace"))) == statuses.count(None)
    with pytest.raises(ValueError, match="keep"):
        record("notify-agent", keep=1.5)


def test_a_url_without_the_extra_names_it(work: Path) -> None:
    code = (
        "import sys; sys.modules['fsspec'] = None\n"
        "import stepfork.trace as t\n"
        "assert 'fsspec' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n    t.Trace.load('s3://bucket/run.sftrace')\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc.code, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "RemoteSupportMissing remote_support_missing" in done.stdout
    assert "pip install 'stepfork-trace[remote]'" in done.stdout
    light = subprocess.run(
        [sys.executable, "-c", "import sys, stepfork.trace; print('fsspec' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert light.stdout.strip() == "False"
