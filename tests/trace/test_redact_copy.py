"""``redact_bundle`` on every reference bundle: the copy validates as its source did, with integrity verified
(issue 14); it never writes in place and refuses a tampered source."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stepfork.trace import TraceStorageError, validate_bundle
from stepfork.trace.models import IntegrityStatus
from stepfork.trace.redact_copy import redact_bundle

from ..interop.test_reference_bundles import BUNDLES


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_the_redacted_copy_of_each_reference_bundle_validates_with_integrity(
    name: str, tmp_path: Path
) -> None:
    source = tmp_path / f"{name}.sftrace"
    shutil.copytree(BUNDLES[name], source)
    copy = redact_bundle(source, tmp_path / "copy.sftrace")
    for strict in (True, False):
        before = validate_bundle(source, strict=strict)
        after = validate_bundle(copy.output, strict=strict, verify_integrity=True)
        assert after.integrity == IntegrityStatus.VERIFIED
        assert after.codes == before.codes
        assert [w.code for w in after.warnings if w.code == "unredacted_secret"] == []


def test_redact_never_writes_in_place(golden_copy, tmp_path: Path) -> None:
    bundle = golden_copy("successful_run")
    before = {p.name: p.read_bytes() for p in bundle.iterdir()}
    for output in (bundle, bundle / "inner.sftrace"):
        with pytest.raises(TraceStorageError) as info:
            redact_bundle(bundle, output, overwrite=True)
        assert info.value.code == "invalid_path"
    assert {p.name: p.read_bytes() for p in bundle.iterdir()} == before


def test_redact_refuses_a_tampered_bundle(golden_copy, tmp_path: Path) -> None:
    bundle = golden_copy("successful_run")
    events = bundle / "events.jsonl"
    events.write_text(events.read_text().replace("Kathmandu", "Kathmandx", 1))
    with pytest.raises(TraceStorageError) as info:
        redact_bundle(bundle, tmp_path / "copy.sftrace")
    assert info.value.code == "integrity_mismatch"
    assert not (tmp_path / "copy.sftrace").exists()


def test_an_existing_output_needs_overwrite_and_must_be_a_bundle(golden_copy, tmp_path: Path) -> None:
    bundle = golden_copy("successful_run")
    out = tmp_path / "copy.sftrace"
    redact_bundle(bundle, out)
    with pytest.raises(TraceStorageError) as info:
        redact_bundle(bundle, out)
    assert info.value.code == "already_exists"
    redact_bundle(bundle, out, overwrite=True)
    notes = tmp_path / "notes.sftrace"
    notes.mkdir()
    (notes / "notes.txt").write_text("x")
    with pytest.raises(TraceStorageError, match=r"notes\.txt"):
        redact_bundle(bundle, notes, overwrite=True)


def test_a_bundle_the_recorder_wrote_redacts_with_its_concurrency_facts(tmp_path: Path) -> None:
    # every bundle recorded since issue 12 carries concurrency.json; the copy keeps it once (it used to be
    # written twice: "File exists")
    from stepfork.trace import record, trace_tool
    from stepfork.trace.bundle import load_trace
    from stepfork.trace.concurrency import facts_of

    @trace_tool
    def lookup(key: str) -> dict[str, str]:
        return {"token": "sk-" + "a" * 40, "key": key}

    source = tmp_path / "run.sftrace"
    with record("agent", output=source):
        lookup("k1")
        lookup("k2")
    assert (source / "concurrency.json").is_file()
    out = tmp_path / "clean.sftrace"
    redact_bundle(source, out)
    checked = validate_bundle(out, verify_integrity=True)
    assert checked.valid, checked.issues
    assert not [i for i in checked.issues if i.code == "unredacted_secret"]
    assert facts_of(load_trace(out)) is not None
    assert "sk-" + "a" * 40 not in (out / "events.jsonl").read_text()


def test_a_redacted_copy_keeps_no_minted_value_its_payloads_no_longer_show(tmp_path: Path) -> None:
    import os

    from stepfork.trace import load_trace, record
    from stepfork.trace.minting import load_minted
    from stepfork.trace.redaction import Redactor

    source = tmp_path / "run.sftrace"
    with record("minted", output=source) as session:
        session.set_output({"booking": os.urandom(6).hex(), "ref": os.urandom(4).hex()})
    output = load_trace(source).events[-1].output
    assert set(load_minted(source).values) == {output["booking"], output["ref"]}
    copy = redact_bundle(source, tmp_path / "copy.sftrace", redactor=Redactor(extra_keys=["booking"]))
    assert load_trace(copy.output).events[-1].output["booking"] == "[REDACTED]"
    assert set(load_minted(copy.output).values) == {output["ref"]}
