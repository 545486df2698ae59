"""The reference implementation's bundles load, verify and validate with their golden verdicts (notes 4).

Verdicts (also in docs/format.md, "Golden verdicts"):
successful/failed_tool/failed_llm, langgraph_failure, incident-triage: valid strict and partial, integrity
verified. diff_baseline/diff_changed: the same, plus a status_mismatch *warning* (manifest left at running,
run_end completed). partial_run: strict gives exactly run_start_count, partial is valid. legacy_v01: valid
strict and partial, integrity unverified_legacy (validate --verify-integrity: legacy, exit 3).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stepfork.trace.bundle import load_trace, save_trace
from stepfork.trace.canonical import fingerprint
from stepfork.trace.integrity import verify_bundle_integrity
from stepfork.trace.models import HASHED_FIELDS, IntegrityStatus
from stepfork.trace.validation import validate_bundle

from ..conftest import GOLDEN, REFERENCE

BUNDLES = {
    "successful_run": GOLDEN / "successful_run.sftrace",
    "failed_tool_run": GOLDEN / "failed_tool_run.sftrace",
    "failed_llm_run": GOLDEN / "failed_llm_run.sftrace",
    "partial_run": GOLDEN / "partial_run.sftrace",
    "legacy_v01": GOLDEN / "legacy_v01.sftrace",
    "diff_baseline": GOLDEN / "diff_baseline.sftrace",
    "diff_changed": GOLDEN / "diff_changed.sftrace",
    "langgraph_failure": REFERENCE / "examples/langgraph_agent/regression/langgraph_failure.sftrace",
    "incident_triage": REFERENCE / "examples/real-llm-case-study/traces/incident-triage.sftrace",
}
# name: (strict codes, partial codes, integrity status, warning codes)
VERDICTS: dict[str, tuple[list[str], list[str], IntegrityStatus, list[str]]] = {
    "successful_run": ([], [], IntegrityStatus.VERIFIED, []),
    "failed_tool_run": ([], [], IntegrityStatus.VERIFIED, []),
    "failed_llm_run": ([], [], IntegrityStatus.VERIFIED, []),
    "partial_run": (["run_start_count"], [], IntegrityStatus.VERIFIED, []),
    "legacy_v01": ([], [], IntegrityStatus.UNVERIFIED_LEGACY, []),
    "diff_baseline": ([], [], IntegrityStatus.VERIFIED, ["status_mismatch"]),
    "diff_changed": ([], [], IntegrityStatus.VERIFIED, ["status_mismatch"]),
    "langgraph_failure": ([], [], IntegrityStatus.VERIFIED, []),
    "incident_triage": ([], [], IntegrityStatus.VERIFIED, []),
}
FILES = ("manifest.json", "events.jsonl", "redactions.json", "integrity.json")


def test_every_reference_bundle_has_a_verdict() -> None:
    found = {p.resolve() for p in REFERENCE.rglob("*.sftrace")}
    assert found == {p.resolve() for p in BUNDLES.values()}


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_reference_bundle_validates_with_its_golden_verdict(name: str) -> None:
    strict_codes, partial_codes, _integrity, warnings = VERDICTS[name]
    strict = validate_bundle(BUNDLES[name], strict=True)
    partial = validate_bundle(BUNDLES[name], strict=False)
    assert strict.codes == strict_codes
    assert partial.codes == partial_codes
    assert [w.code for w in strict.warnings] == warnings
    assert not strict.unreadable
    assert not partial.unreadable


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_reference_bundle_integrity_has_its_golden_status(name: str) -> None:
    strict_codes, _, integrity, _ = VERDICTS[name]
    assert verify_bundle_integrity(BUNDLES[name]).status == integrity
    result = validate_bundle(BUNDLES[name], strict=True, verify_integrity=True)
    assert result.integrity == integrity
    if integrity == IntegrityStatus.VERIFIED:
        assert result.codes == strict_codes  # payload hashes all recompute
    else:
        assert result.legacy
        assert result.codes == [*strict_codes, "integrity_unverified"]


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_every_stored_payload_hash_recomputes(name: str) -> None:
    for event in load_trace(BUNDLES[name]).events:
        for field, hash_name in zip(HASHED_FIELDS[event.type], ("input_hash", "output_hash"), strict=True):
            expected = None if field is None else fingerprint(getattr(event, field))
            assert getattr(event, hash_name) == expected, (event.id, hash_name)


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_saving_a_loaded_reference_bundle_reproduces_its_bytes(name: str, tmp_path: Path) -> None:
    saved = save_trace(load_trace(BUNDLES[name]), tmp_path / f"{name}.sftrace")
    for file in FILES:
        original = BUNDLES[name] / file
        if original.exists():
            assert (saved / file).read_bytes() == original.read_bytes(), file


def test_golden_counts_and_failures_load_as_written() -> None:
    failed_tool = load_trace(BUNDLES["failed_tool_run"])
    assert failed_tool.failure is not None
    assert failed_tool.failure.step == 3
    assert [(e.event_id, e.path, e.reason) for e in failed_tool.redactions] == [
        ("evt_tool_002", "/input/api_key", "sensitive_key")
    ]
    partial = load_trace(BUNDLES["partial_run"])
    assert (partial.totals.events, len(partial.events)) == (1, 1)


def test_a_copied_reference_bundle_with_one_edited_byte_fails_integrity(tmp_path: Path) -> None:
    copy = Path(shutil.copytree(BUNDLES["successful_run"], tmp_path / "s.sftrace"))
    data = (copy / "events.jsonl").read_bytes().replace(b"Kathmandu", b"Kathmandv", 1)
    (copy / "events.jsonl").write_bytes(data)
    result = validate_bundle(copy, verify_integrity=True)
    assert result.integrity == IntegrityStatus.MISMATCH
    assert "integrity_mismatch" in result.codes
    assert "payload_hash_mismatch" in result.codes
