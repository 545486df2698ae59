"""RecordingSession.add_metadata: extension files listed in integrity.json (DESIGN.md "Bundle I/O")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepfork.trace import record, validate_bundle
from stepfork.trace.integrity import verify_bundle_integrity


def test_metadata_is_written_merged_redacted_and_listed_in_integrity(bundle: Path) -> None:
    with record("agent", output=bundle) as session:
        session.add_metadata("sdk-versions", {"openai": "3.57.0"}, merge=True)
        session.add_metadata("sdk-versions", {"anthropic": "2.14.0"}, merge=True)
        session.add_metadata("notes", {"token": "Bearer abcdefghijklmnopqrstuvwxyz0123"})
    assert json.loads((bundle / "sdk-versions.json").read_text()) == {
        "openai": "3.57.0",
        "anthropic": "2.14.0",
    }
    assert "abcdefghijklmnopqrstuvwxyz0123" not in (bundle / "notes.json").read_text()
    files = json.loads((bundle / "integrity.json").read_text())["files"]
    assert {"sdk-versions.json", "notes.json"} <= set(files)
    assert verify_bundle_integrity(bundle).status.value == "verified"
    assert validate_bundle(bundle, verify_integrity=True).valid


@pytest.mark.parametrize("name", ["manifest", "events", "Bad Name", "../x", ""])
def test_reserved_or_unsafe_metadata_names_are_refused(bundle: Path, name: str) -> None:
    with record("agent", output=bundle) as session, pytest.raises(ValueError, match="metadata name"):
        session.add_metadata(name, {})
