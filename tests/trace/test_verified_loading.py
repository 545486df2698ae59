"""load_verified_trace / check_integrity: the one integrity refusal every command shares (issue 13)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from stepfork.trace import TraceIntegrityError, TraceStorageError, load_verified_trace


def test_an_intact_bundle_loads(golden_copy: Callable[..., Path]) -> None:
    bundle = golden_copy("successful_run")
    assert load_verified_trace(bundle).agent_name


def test_a_cut_events_file_is_refused_naming_the_file(golden_copy: Callable[..., Path]) -> None:
    bundle = golden_copy("successful_run")
    events = bundle / "events.jsonl"
    events.write_bytes(b"".join(events.read_bytes().splitlines(keepends=True)[:-1]))
    with pytest.raises(TraceIntegrityError) as info:
        load_verified_trace(bundle)
    error = info.value
    assert isinstance(error, TraceStorageError)  # callers that catch unreadable bundles still catch it
    assert (error.code, error.path, error.bundle) == ("integrity_mismatch", str(events), str(bundle))
    assert str(error) == (
        f"{events} does not match its digest in integrity.json: the bundle changed after it was written "
        f"and is refused; run `stepfork validate --verify-integrity {bundle}`"
    )


def test_a_missing_listed_file_is_refused(golden_copy: Callable[..., Path]) -> None:
    bundle = golden_copy("successful_run")
    (bundle / "redactions.json").unlink()
    with pytest.raises(TraceIntegrityError) as info:
        load_verified_trace(bundle)
    assert info.value.code == "missing_file"
    assert "redactions.json is listed in integrity.json but missing" in str(info.value)


def _unsafe_events(bundle: Path, kind: str) -> Path:
    """Put a symlink (to a copy outside the bundle) or a FIFO where the bundle's events.jsonl was."""
    import os

    events = bundle / "events.jsonl"
    outside = bundle.parent / "outside.jsonl"
    outside.write_bytes(events.read_bytes())
    events.unlink()
    if kind == "symlink":
        events.symlink_to(outside)
    else:
        os.mkfifo(events)
    return events


@pytest.mark.parametrize(("kind", "why"), [("symlink", "a symbolic link"), ("fifo", "not a regular file")])
def test_a_listed_file_that_is_not_a_regular_file_is_refused_saying_what_it_is(
    golden_copy: Callable[..., Path], kind: str, why: str
) -> None:
    # validate says "events.jsonl: a symbolic link (refused)"; the refusal of every command that loads
    # through the integrity check said "is listed in integrity.json but missing", which it is not
    bundle = golden_copy("successful_run")
    events = _unsafe_events(bundle, kind)
    with pytest.raises(TraceIntegrityError) as info:
        load_verified_trace(bundle)
    assert (info.value.code, info.value.path) == ("missing_file", str(events))
    assert str(info.value) == (
        f"{events}: {why} (refused); a bundle file must be a regular file inside the bundle; "
        f"run `stepfork validate --verify-integrity {bundle}`"
    )
    assert "missing" not in str(info.value)


@pytest.mark.parametrize(("kind", "why"), [("symlink", "a symbolic link"), ("fifo", "not a regular file")])
def test_integrity_verification_says_what_is_there_instead_of_a_file(
    golden_copy: Callable[..., Path], kind: str, why: str
) -> None:
    from stepfork.trace.integrity import IntegrityIssue, verify_bundle_integrity

    bundle = golden_copy("successful_run")
    _unsafe_events(bundle, kind)
    assert verify_bundle_integrity(bundle).issues == [
        IntegrityIssue("missing_file", f"events.jsonl is {why} (refused)", "events.jsonl")
    ]
    (bundle / "redactions.json").unlink()
    assert verify_bundle_integrity(bundle).issues[-1] == IntegrityIssue(
        "missing_file", "redactions.json is missing", "redactions.json"
    )


def test_a_legacy_bundle_without_integrity_json_loads(golden_copy: Callable[..., Path]) -> None:
    bundle = golden_copy("successful_run")
    (bundle / "integrity.json").unlink()
    assert load_verified_trace(bundle).events


@pytest.mark.parametrize("kept", [1, 3])
def test_a_legacy_bundle_cut_at_a_line_boundary_is_refused(
    golden_copy: Callable[..., Path], kept: int
) -> None:
    # without integrity.json, a finished run's events.jsonl cut between two lines is still whole JSON lines:
    # replayed, it diverged (the agent's call found nothing recorded) instead of being refused as damaged
    bundle = golden_copy("successful_run")
    (bundle / "integrity.json").unlink()
    events = bundle / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    events.write_bytes(b"".join(lines[:kept]))
    before = events.read_bytes()
    with pytest.raises(TraceIntegrityError) as info:
        load_verified_trace(bundle)
    assert (info.value.code, info.value.path) == ("event_count_mismatch", str(events))
    assert str(info.value) == (
        f"{bundle}: events.jsonl holds {kept} event(s) but manifest.json counts {len(lines)} (totals.events) "
        f"for a finished run: the bundle was cut or edited and is refused; run `stepfork validate {bundle}`"
    )
    assert events.read_bytes() == before  # never repaired


@pytest.mark.parametrize("drop", ["totals", "events"])
def test_a_legacy_manifest_that_counts_no_events_is_not_checked_against_them(
    golden_copy: Callable[..., Path], drop: str
) -> None:
    # totals (and each count in it) may be left out of a manifest: nothing to compare, the bundle loads
    bundle = golden_copy("successful_run")
    (bundle / "integrity.json").unlink()
    manifest = json.loads((bundle / "manifest.json").read_text())
    if drop == "totals":
        del manifest["totals"]
    else:
        del manifest["totals"]["events"]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert load_verified_trace(bundle).events


def test_a_path_that_is_not_a_bundle_gets_the_loaders_error(tmp_path: Path) -> None:
    with pytest.raises(TraceStorageError) as info:
        load_verified_trace(tmp_path / "absent.sftrace")
    assert not isinstance(info.value, TraceIntegrityError)
    assert info.value.code == "missing_file"
