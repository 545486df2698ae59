"""integrity.json: digests, statuses and exactly the issue codes of notes 2.4."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stepfork.trace.bundle import Trace, save_trace
from stepfork.trace.integrity import compute_integrity, file_sha256, verify_bundle_integrity, write_integrity
from stepfork.trace.models import IntegrityStatus, RunStart

T0 = datetime(2026, 10, 8, 10, 0, tzinfo=UTC)
FILES = ("manifest.json", "events.jsonl", "redactions.json")


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    trace = Trace(run_id="r", agent_name="a", created_at=T0)
    trace.add(RunStart(id="s", run_id="r", timestamp=T0, input={"q": "x"}))
    return save_trace(trace, tmp_path / "run.sftrace")


def codes(path: Path) -> tuple[IntegrityStatus, list[tuple[str, str | None]]]:
    result = verify_bundle_integrity(path)
    return result.status, [(issue.code, issue.file) for issue in result.issues]


def test_integrity_json_holds_the_sha256_of_the_exact_bytes_of_each_file(bundle: Path) -> None:
    record = json.loads((bundle / "integrity.json").read_bytes())
    assert list(record) == ["schema_version", "algorithm", "files"]
    assert record["algorithm"] == "sha256"
    assert record["files"] == {
        name: hashlib.sha256((bundle / name).read_bytes()).hexdigest() for name in FILES
    }
    assert (bundle / "integrity.json").read_bytes().endswith(b"}\n")
    assert compute_integrity(bundle).files == record["files"]


def test_an_untouched_bundle_verifies_all_three_files(bundle: Path) -> None:
    result = verify_bundle_integrity(bundle)
    assert (result.status, result.issues, sorted(result.verified_files)) == (
        IntegrityStatus.VERIFIED,
        [],
        sorted(FILES),
    )


@pytest.mark.parametrize("name", FILES)
def test_one_flipped_byte_in_a_file_is_integrity_mismatch_for_that_file(bundle: Path, name: str) -> None:
    data = bytearray((bundle / name).read_bytes())
    data[5] ^= 0x01
    (bundle / name).write_bytes(bytes(data))
    assert codes(bundle) == (IntegrityStatus.MISMATCH, [("integrity_mismatch", name)])
    assert name not in verify_bundle_integrity(bundle).verified_files


def test_no_integrity_json_is_unverified_legacy(bundle: Path) -> None:
    (bundle / "integrity.json").unlink()
    assert codes(bundle) == (IntegrityStatus.UNVERIFIED_LEGACY, [("integrity_unverified", "integrity.json")])


def _recorded(tmp_path: Path) -> Path:
    """A finished bundle this Stepfork recorded (its manifest names this version)."""
    from stepfork.trace import record

    out = tmp_path / "recorded.sftrace"
    with record("a", output=out):
        pass
    return out


def test_integrity_json_removed_from_a_finished_run_of_this_version_is_a_mismatch(tmp_path: Path) -> None:
    # NEWCOMER2 14: Stepfork 0.2.0+ writes integrity.json at the end of every run it finishes; without it,
    # the bundle is not a legacy one but one that changed after it was written
    path = _recorded(tmp_path)
    (path / "integrity.json").unlink()
    result = verify_bundle_integrity(path)
    assert codes(path) == (IntegrityStatus.MISMATCH, [("missing_file", "integrity.json")])
    assert result.issues[0].detail is not None
    assert result.issues[0].detail.startswith("missing, but manifest.json says Stepfork 0.2.0 wrote")


@pytest.mark.parametrize("version", ["0.1.0a6", "0.1.0a4", None, "not a version"])
def test_a_bundle_of_another_writer_without_integrity_json_stays_legacy(
    tmp_path: Path, version: str | None
) -> None:
    path = _recorded(tmp_path)
    (path / "integrity.json").unlink()
    manifest = json.loads((path / "manifest.json").read_text())
    if version is None:
        del manifest["environment"]
    else:
        manifest["environment"]["stepfork_version"] = version
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert codes(path) == (IntegrityStatus.UNVERIFIED_LEGACY, [("integrity_unverified", "integrity.json")])


def test_a_killed_recording_of_this_version_is_unverified_not_refused(tmp_path: Path) -> None:
    # what a recorder killed mid-run leaves: the manifest still running, integrity.json never written
    path = _recorded(tmp_path)
    (path / "integrity.json").unlink()
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["status"] = "running"
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert codes(path) == (IntegrityStatus.UNVERIFIED_LEGACY, [("integrity_unverified", "integrity.json")])


def test_a_missing_payload_file_is_missing_file(bundle: Path) -> None:
    (bundle / "events.jsonl").unlink()
    assert codes(bundle) == (IntegrityStatus.MISMATCH, [("missing_file", "events.jsonl")])


def rewrite(bundle: Path, change: object) -> None:
    record = json.loads((bundle / "integrity.json").read_bytes())
    change(record)  # type: ignore[operator]
    (bundle / "integrity.json").write_text(json.dumps(record))


@pytest.mark.parametrize(
    ("change", "file"),
    [
        (lambda r: r.__setitem__("extra", 1), "integrity.json"),
        # a payload file's digest missing or malformed: the issue names that file (as the reference did)
        (lambda r: r["files"].pop("events.jsonl"), "events.jsonl"),
        (lambda r: r["files"].__setitem__("events.jsonl", "ABC"), "events.jsonl"),
        (
            lambda r: r["files"].__setitem__("manifest.json", r["files"]["manifest.json"].upper()),
            "manifest.json",
        ),
        (lambda r: r.__setitem__("files", []), "integrity.json"),
        (lambda r: r.__setitem__("schema_version", "0.2"), "integrity.json"),
    ],
    ids=["extra-key", "missing-digest", "short-digest", "uppercase-digest", "files-not-object", "schema"],
)
def test_bad_metadata_is_integrity_metadata_invalid(bundle: Path, change: object, file: str) -> None:
    rewrite(bundle, change)
    assert codes(bundle) == (IntegrityStatus.MISMATCH, [("integrity_metadata_invalid", file)])


def test_extra_names_in_files_are_verified_like_the_payload_files(bundle: Path) -> None:
    # issue 7: the reference ignored extra names, so a changed extension file passed verification
    rewrite(bundle, lambda r: r["files"].__setitem__("notes.txt", "0" * 64))
    assert codes(bundle) == (IntegrityStatus.MISMATCH, [("missing_file", "notes.txt")])
    (bundle / "notes.txt").write_text("notes\n")
    assert codes(bundle) == (IntegrityStatus.MISMATCH, [("integrity_mismatch", "notes.txt")])


def test_another_algorithm_is_integrity_algorithm_unsupported(bundle: Path) -> None:
    rewrite(bundle, lambda r: r.__setitem__("algorithm", "md5"))
    assert codes(bundle) == (
        IntegrityStatus.MISMATCH,
        [("integrity_algorithm_unsupported", "integrity.json")],
    )


@pytest.mark.parametrize("kind", ["bad-json", "directory", "symlink"])
def test_an_unreadable_integrity_file_is_integrity_metadata_invalid(
    bundle: Path, tmp_path: Path, kind: str
) -> None:
    meta = bundle / "integrity.json"
    if kind == "bad-json":
        meta.write_bytes(b"{")
    else:
        target = tmp_path / "elsewhere.json"
        target.write_bytes(meta.read_bytes())
        meta.unlink()
        meta.mkdir() if kind == "directory" else meta.symlink_to(target)
    assert codes(bundle) == (IntegrityStatus.MISMATCH, [("integrity_metadata_invalid", "integrity.json")])


def test_write_integrity_restores_verification_after_an_edit(bundle: Path) -> None:
    (bundle / "redactions.json").write_bytes(b'{\n  "schema_version": "0.1",\n  "entries": []\n}\n ')
    assert verify_bundle_integrity(bundle).status == IntegrityStatus.MISMATCH
    assert write_integrity(bundle) == bundle / "integrity.json"
    assert verify_bundle_integrity(bundle).status == IntegrityStatus.VERIFIED


@pytest.mark.parametrize("size", [0, 1, 4096, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 17])
def test_file_sha256_is_the_sha256_of_the_whole_file_whatever_its_size(tmp_path: Path, size: int) -> None:
    # one read up to 1 MiB, chunks beyond: the digest is the same either way
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    (tmp_path / "f").write_bytes(data)
    assert file_sha256(tmp_path / "f") == hashlib.sha256(data).hexdigest()


def test_a_verified_load_parses_the_bytes_it_verified_not_a_file_changed_after_the_check(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A writer replaces events.jsonl right after the integrity check (the window between checking a file
    # and reading it): the loader must parse what it verified, read once, never the new file unverified.
    import stepfork.trace.bundle as bundle_module
    from stepfork.trace import load_verified_trace

    original = bundle_module.check_integrity
    events = bundle / "events.jsonl"
    verified_lines = events.read_bytes().count(b"\n")

    def check_then_replace(path, **kwargs):
        original(path, **kwargs)
        events.write_bytes(b"")  # a valid, different, unverified events file

    monkeypatch.setattr(bundle_module, "check_integrity", check_then_replace)
    trace = load_verified_trace(bundle)
    assert len(trace.events) == verified_lines > 0


def test_a_verified_load_of_files_past_the_kept_limit_still_verifies_and_loads(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Files over integrity.KEPT_LIMIT are hashed in chunks and read again to parse (memory bounded): the
    # bundle loads the same, and a changed one is still refused before it is parsed.
    import stepfork.trace.integrity as integrity
    from stepfork.trace import TraceIntegrityError, load_verified_trace

    monkeypatch.setattr(integrity, "KEPT_LIMIT", 0)
    assert len(load_verified_trace(bundle).events) == 1
    events = bundle / "events.jsonl"
    events.write_bytes(events.read_bytes().replace(b'"x"', b'"y"'))
    with pytest.raises(TraceIntegrityError) as info:
        load_verified_trace(bundle)
    assert info.value.code == "integrity_mismatch"
