"""A bundle whose stored payload hash does not match its payload (edited, integrity.json rewritten to match
the edit) and a bundle that fails strict validation are refused by every command that replays one, as
``export`` refuses them: one line naming the reason code, exit 2 (``run`` and ``check``: could not
execute), never DIVERGED or PASSED."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from .conftest import QuickstartExport, run_cli


def _rehash(bundle: Path) -> None:
    """Rewrite integrity.json for the files as they are now (what a careless edit tool does)."""
    record = json.loads((bundle / "integrity.json").read_text())
    for name in record["files"]:
        record["files"][name] = hashlib.sha256((bundle / name).read_bytes()).hexdigest()
    (bundle / "integrity.json").write_text(json.dumps(record))


def _tampered(quickstart: Path) -> Path:
    """The run's final output edited (``should_notify`` false -> true), its stored hash left stale."""
    bundle = quickstart / "bad.sftrace"
    shutil.copytree(quickstart / "notify.sftrace", bundle)
    events = bundle / "events.jsonl"
    text = events.read_text()
    assert text.count('"should_notify":false') == 1
    events.write_text(text.replace('"should_notify":false', '"should_notify":true '))
    _rehash(bundle)
    return bundle


def _invalid(quickstart: Path) -> Path:
    """Strict validation fails (an event's step is 2**70); every payload hash still holds."""
    bundle = quickstart / "bad.sftrace"
    shutil.copytree(quickstart / "notify.sftrace", bundle)
    lines = (bundle / "events.jsonl").read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"step":1,', f'"step":{2**70},', 1)
    (bundle / "events.jsonl").write_text("".join(lines))
    _rehash(bundle)
    return bundle


CASES = {"tampered": (_tampered, "payload_hash_mismatch"), "invalid": (_invalid, "step_order")}


@pytest.fixture(params=sorted(CASES))
def bad(request: pytest.FixtureRequest, quickstart: Path) -> tuple[Path, str]:
    make, code = CASES[request.param]
    return make(quickstart), code


def _one_line(err: str, code: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert code in lines[0]
    assert "bad.sftrace" in lines[0]
    assert "Traceback" not in err


def test_export_and_validate_already_refuse_them(bad: tuple[Path, str], quickstart: Path) -> None:
    _, code = bad
    exported = run_cli("export", "bad.sftrace", "-e", "quickstart:run_agent", "-o", "t.py", cwd=quickstart)
    assert exported.code == 2, exported.text
    assert code in exported.err
    assert run_cli("validate", "bad.sftrace", "--verify-integrity", cwd=quickstart).code == 1


def test_replay_refuses_them_before_the_agent_runs(bad: tuple[Path, str], quickstart: Path) -> None:
    _, code = bad
    result = run_cli("replay", "bad.sftrace", "-e", "quickstart:run_agent", cwd=quickstart)
    assert (result.code, result.out) == (2, ""), result.text
    _one_line(result.err, code)
    as_json = run_cli("replay", "bad.sftrace", "-e", "quickstart:run_agent", "--json", cwd=quickstart)
    assert json.loads(as_json.out)["error"] == "integrity_mismatch"


def test_fork_and_minimize_refuse_them(bad: tuple[Path, str], quickstart: Path) -> None:
    _, code = bad
    forked = run_cli(
        "fork", "bad.sftrace", "--step", "3", "-e", "quickstart:run_agent", "-o", "f.sftrace", cwd=quickstart
    )
    assert forked.code == 2, forked.text
    _one_line(forked.err, code)
    assert not (quickstart / "f.sftrace").exists()
    minimized = run_cli(
        "minimize", "bad.sftrace", "-e", "quickstart:run_agent", "-o", "m.sftrace", "--json", cwd=quickstart
    )
    assert minimized.code == 2, minimized.text
    assert code in json.loads(minimized.out)["message"]
    assert not (quickstart / "m.sftrace").exists()


def test_check_and_run_say_could_not_execute(
    bad: tuple[Path, str], quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    _, code = bad
    corpus = quickstart / "corpus"
    corpus.mkdir()
    shutil.move(quickstart / "bad.sftrace", corpus / "bad.sftrace")
    checked = run_cli("check", "corpus", "-e", "quickstart:run_agent", "--json", cwd=quickstart)
    assert checked.code == 2, checked.text
    verdict = json.loads(checked.out)["verdicts"][0]
    assert (verdict["verdict"], verdict["reason"]) == ("COULD NOT EXECUTE", "bundle_unreadable"), verdict
    quickstart_export(quickstart, "quickstart:run_agent", "test_buggy.py")
    ran = run_cli("run", "test_buggy.py", "--bundle", "corpus/bad.sftrace", "--json", cwd=quickstart)
    receipt = json.loads(ran.out)
    assert (ran.code, receipt["verdict"], receipt["reason"]) == (2, "could_not_execute", "bundle_unreadable")
    assert code in receipt["detail"]


def test_a_killed_recording_is_still_replayed(quickstart: Path) -> None:
    """A manifest left ``running`` (totals 0, no run_end, no integrity.json) is checked by the partial
    rules, as ``validate --partial`` does: replay reaches the agent and reports the missing calls."""
    bundle = quickstart / "killed.sftrace"
    shutil.copytree(quickstart / "notify.sftrace", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest.update(status="running", failure=None)
    manifest["totals"] = {"events": 0, "llm_calls": 0, "tool_calls": 0}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    lines = (bundle / "events.jsonl").read_text().splitlines(keepends=True)
    (bundle / "events.jsonl").write_text("".join(lines[:3]))  # run_start, the tool call and its result
    (bundle / "integrity.json").unlink()
    result = run_cli("replay", "killed.sftrace", "-e", "quickstart:run_agent", "--json", cwd=quickstart)
    assert result.code == 1, result.text
    report = json.loads(result.out)
    assert report["matching"]["status"] == "DIVERGED"
    assert report["matching"]["code"] == "exhausted"
