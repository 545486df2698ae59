"""``stepfork inspect --partial``: a run killed mid-write (status running, torn final line) is inspected as
``validate --partial`` reads it; without the flag the refusal points at it. The bundle is never repaired."""

from __future__ import annotations

import json
from pathlib import Path

from stepfork.trace.models import RunStatus

from ..view_support import calls_trace
from .conftest import run_cli


def _crashed(tmp_path: Path) -> tuple[Path, int]:
    trace = calls_trace(2)
    trace.status = RunStatus.RUNNING
    bundle = trace.save(tmp_path / "crashed.sftrace")
    (bundle / "integrity.json").unlink()  # a killed recorder never wrote it
    lines = len((bundle / "events.jsonl").read_bytes().splitlines())
    with (bundle / "events.jsonl").open("ab") as handle:
        handle.write(b'{"id":"torn","ty')  # os._exit in the middle of a write
    return bundle, lines


def test_a_crashed_run_is_refused_with_a_pointer_to_partial(tmp_path: Path) -> None:
    bundle, lines = _crashed(tmp_path)
    result = run_cli("inspect", bundle)
    assert result.code == 2, result.text
    assert result.err.strip().count("\n") == 0, result.err
    assert f"events.jsonl:{lines + 1}: truncated final line" in result.err
    assert "pass --partial to inspect a run that did not finish" in result.err


def test_partial_inspects_what_was_written_and_repairs_nothing(tmp_path: Path) -> None:
    bundle, lines = _crashed(tmp_path)
    before = (bundle / "events.jsonl").read_bytes()
    data = run_cli("inspect", bundle, "--partial", "--json")
    assert data.code == 0, data.text
    found = json.loads(data.out)
    assert found["status"] == "running"
    assert found["events"] == lines == len(found["timeline"])
    assert found["torn_line"] == lines + 1
    human = run_cli("inspect", bundle, "--partial", "--all")
    assert human.code == 0, human.text
    assert f"events.jsonl:{lines + 1} cut by a crash; not read" in human.out
    assert (bundle / "events.jsonl").read_bytes() == before
    assert sorted(p.name for p in bundle.iterdir()) == ["events.jsonl", "manifest.json", "redactions.json"]


def test_partial_does_not_accept_a_finished_run_cut_short(tmp_path: Path) -> None:
    trace = calls_trace(2)
    bundle = trace.save(tmp_path / "done.sftrace")
    with (bundle / "events.jsonl").open("ab") as handle:
        handle.write(b'{"id":"torn"')
    result = run_cli("inspect", bundle, "--partial")
    assert result.code == 2, result.text
    assert "truncated final line" in result.err
    # no pointer to --partial without it, only why it cannot help (tests/e2e/test_cli_cut_bundles.py)
    assert "pass --partial" not in run_cli("inspect", bundle).err
