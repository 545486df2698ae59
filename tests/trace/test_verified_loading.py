"""load_verified_trace / check_integrity: the one integrity refusal every command shares (issue 13)."""

from __future__ import annotations

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


def test_a_legacy_bundle_without_integrity_json_loads(golden_copy: Callable[..., Path]) -> None:
    bundle = golden_copy("successful_run")
    (bundle / "integrity.json").unlink()
    assert load_verified_trace(bundle).events


def test_a_path_that_is_not_a_bundle_gets_the_loaders_error(tmp_path: Path) -> None:
    with pytest.raises(TraceStorageError) as info:
        load_verified_trace(tmp_path / "absent.sftrace")
    assert not isinstance(info.value, TraceIntegrityError)
    assert info.value.code == "missing_file"
