"""Extension files listed in integrity.json (``sdk-versions.json``; DESIGN.md "Bundle I/O") are verified like
the payload files, and a listed name can never point outside the bundle (issue 7: a changed file must fail
``--verify-integrity``; docs/format.md "Integrity").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fuzz_agent import record_into

from stepfork.trace import validate_bundle, verify_bundle_integrity
from stepfork.trace.integrity import write_integrity

EXTENSION = "sdk-versions.json"


@pytest.fixture
def extended(tmp_path: Path) -> Path:
    bundle = record_into(tmp_path / "ext.sftrace")
    (bundle / EXTENSION).write_text('{"openai": "3.50.0"}\n')
    write_integrity(bundle, [EXTENSION])
    assert verify_bundle_integrity(bundle).verified
    return bundle


def _list(bundle: Path, name: str, digest: str) -> None:
    meta = json.loads((bundle / "integrity.json").read_text())
    meta["files"][name] = digest
    (bundle / "integrity.json").write_text(json.dumps(meta, indent=2) + "\n")


def test_a_changed_extension_file_fails_integrity(extended: Path) -> None:
    (extended / EXTENSION).write_text('{"openai": "9.99.9"}\n')
    result = verify_bundle_integrity(extended)
    assert (result.status.value, [(i.code, i.file) for i in result.issues]) == (
        "mismatch",
        [("integrity_mismatch", EXTENSION)],
    )
    assert not validate_bundle(extended, verify_integrity=True).valid


def test_a_listed_extension_file_that_is_gone_is_missing_file(extended: Path) -> None:
    (extended / EXTENSION).unlink()
    issues = verify_bundle_integrity(extended).issues
    assert [(i.code, i.file) for i in issues] == [("missing_file", EXTENSION)]


@pytest.mark.parametrize(
    "name", ["../outside.json", "/etc/hostname", "sub/dir.json", ".hidden", "", "a\x00b", "integrity.json"]
)
def test_a_listed_name_that_is_not_a_plain_file_of_the_bundle_is_invalid_metadata(
    extended: Path, name: str
) -> None:
    (extended.parent / "outside.json").write_text("{}\n")
    _list(extended, name, "0" * 64)
    result = verify_bundle_integrity(extended)
    assert [i.code for i in result.issues] == ["integrity_metadata_invalid"]
