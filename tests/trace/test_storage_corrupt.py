"""Loading refuses every corrupt bundle with its code, path and line; it never repairs (C11, notes 4, 5)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stepfork.trace.bundle import Trace, load_trace, save_trace
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.models import RunEnd, RunStart, RunStatus, ToolCall, ToolResult
from stepfork.trace.validation import validate_bundle

T0 = datetime(2026, 10, 8, 10, 0, tzinfo=UTC)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    trace = Trace(run_id="r", agent_name="a", created_at=T0, status=RunStatus.COMPLETED)
    trace.add(RunStart(id="s", run_id="r", timestamp=T0, input={"q": 1}))
    trace.add(ToolCall(id="c", run_id="r", parent_id="s", timestamp=T0, name="t", input={"x": 1}))
    trace.add(ToolResult(id="o", run_id="r", parent_id="c", timestamp=T0, name="t", output=[1, 2]))
    trace.add(RunEnd(id="z", run_id="r", parent_id="s", timestamp=T0, run_status=RunStatus.COMPLETED))
    return save_trace(trace, tmp_path / "run.sftrace")


def load_error(path: Path) -> TraceStorageError:
    with pytest.raises(TraceStorageError) as info:
        load_trace(path)
    return info.value


def replace_line(path: Path, index: int, new: bytes) -> None:
    lines = (path / "events.jsonl").read_bytes().split(b"\n")
    lines[index] = new
    (path / "events.jsonl").write_bytes(b"\n".join(lines))


def test_a_truncated_final_line_is_invalid_json_at_that_line(bundle: Path) -> None:
    data = (bundle / "events.jsonl").read_bytes()
    (bundle / "events.jsonl").write_bytes(data[:-20])
    err = load_error(bundle)
    assert (err.code, err.line, Path(err.path or "").name) == ("invalid_json", 4, "events.jsonl")


def test_a_complete_final_line_without_newline_is_still_refused(bundle: Path) -> None:
    data = (bundle / "events.jsonl").read_bytes()
    (bundle / "events.jsonl").write_bytes(data[:-1])
    assert (load_error(bundle).code, load_error(bundle).line) == ("invalid_json", 4)


def test_a_blank_line_is_invalid_json(bundle: Path) -> None:
    replace_line(bundle, 1, b"")
    assert (load_error(bundle).code, load_error(bundle).line) == ("invalid_json", 2)


def test_a_flipped_byte_breaking_json_is_invalid_json(bundle: Path) -> None:
    data = bytearray((bundle / "events.jsonl").read_bytes())
    data[data.index(b'"step"') - 1] = ord("[")
    (bundle / "events.jsonl").write_bytes(bytes(data))
    assert load_error(bundle).code == "invalid_json"


def test_invalid_utf8_is_invalid_json(bundle: Path) -> None:
    data = (bundle / "events.jsonl").read_bytes().replace(b'"x":1', b'"x":"\xff"')
    (bundle / "events.jsonl").write_bytes(data)
    assert (load_error(bundle).code, load_error(bundle).line) == ("invalid_json", 2)


def test_an_extra_key_in_an_event_is_invalid_event(bundle: Path) -> None:
    data = (bundle / "events.jsonl").read_bytes().replace(b'{"id":"c",', b'{"extra":1,"id":"c",')
    (bundle / "events.jsonl").write_bytes(data)
    assert (load_error(bundle).code, load_error(bundle).line) == ("invalid_event", 2)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"step":1', b'"step":"1"'),
        (b'"step":1', b'"step":true'),
        (b'"step":1', b'"step":1.0'),
        (
            b'"timestamp":"2026-10-08T10:00:00Z","duration_ms":null,"status":"ok","replay_policy":"frozen","input_hash":"',
            b'"timestamp":0,"duration_ms":null,"status":"ok","replay_policy":"frozen","input_hash":"',
        ),
    ],
)
def test_values_of_the_wrong_json_type_are_refused_not_coerced(bundle: Path, old: bytes, new: bytes) -> None:
    data = (bundle / "events.jsonl").read_bytes()
    index = data.index(b'{"id":"c"')
    (bundle / "events.jsonl").write_bytes(data[:index] + data[index:].replace(old, new, 1))
    assert (load_error(bundle).code, load_error(bundle).line) == ("invalid_event", 2)


def test_an_unknown_event_type_is_invalid_event(bundle: Path) -> None:
    data = (bundle / "events.jsonl").read_bytes().replace(b'"type":"tool_call"', b'"type":"tool_cal"')
    (bundle / "events.jsonl").write_bytes(data)
    assert load_error(bundle).code == "invalid_event"


def test_an_extra_key_in_the_manifest_is_invalid_manifest(bundle: Path) -> None:
    text = (bundle / "manifest.json").read_bytes().replace(b'"format"', b'"extra": 1,\n  "format"')
    (bundle / "manifest.json").write_bytes(text)
    assert load_error(bundle).code == "invalid_manifest"


def test_another_schema_version_is_unsupported_schema(bundle: Path) -> None:
    text = (bundle / "manifest.json").read_bytes().replace(b'"0.1"', b'"0.2"')
    (bundle / "manifest.json").write_bytes(text)
    assert load_error(bundle).code == "unsupported_schema"
    redactions = (bundle / "redactions.json").read_bytes().replace(b'"0.1"', b'"9"')
    (bundle / "manifest.json").write_bytes(text.replace(b'"0.2"', b'"0.1"'))
    (bundle / "redactions.json").write_bytes(redactions)
    assert load_error(bundle).code == "unsupported_schema"


def test_a_naive_created_at_is_invalid_manifest(bundle: Path) -> None:
    text = (bundle / "manifest.json").read_bytes().replace(b"10:00:00Z", b"10:00:00")
    (bundle / "manifest.json").write_bytes(text)
    assert load_error(bundle).code == "invalid_manifest"


def test_bad_json_in_the_manifest_is_invalid_json(bundle: Path) -> None:
    (bundle / "manifest.json").write_bytes(b"{\n")
    assert load_error(bundle).code == "invalid_json"


@pytest.mark.parametrize("name", ["manifest.json", "events.jsonl", "redactions.json"])
def test_a_missing_required_file_is_missing_file(bundle: Path, name: str) -> None:
    (bundle / name).unlink()
    assert load_error(bundle).code == "missing_file"
    result = validate_bundle(bundle)
    assert [(i.code, i.location) for i in result.issues] == [("missing_file", name)]


@pytest.mark.parametrize("name", ["manifest.json", "events.jsonl", "redactions.json"])
def test_a_directory_in_place_of_a_file_is_missing_file(bundle: Path, name: str) -> None:
    (bundle / name).unlink()
    (bundle / name).mkdir()
    assert load_error(bundle).code == "missing_file"
    assert validate_bundle(bundle).unreadable


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("manifest.json", "invalid_manifest"),
        ("events.jsonl", "invalid_event"),
        ("redactions.json", "invalid_manifest"),
    ],
)
def test_a_symlink_out_of_the_bundle_is_refused_without_reading_it(
    bundle: Path, tmp_path: Path, name: str, code: str
) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes((bundle / name).read_bytes())
    (bundle / name).unlink()
    (bundle / name).symlink_to(outside)
    err = load_error(bundle)
    assert (err.code, Path(err.path or "").name) == (code, name)
    assert validate_bundle(bundle).unreadable


def test_a_fifo_in_place_of_a_file_is_refused_without_blocking(bundle: Path) -> None:
    (bundle / "redactions.json").unlink()
    os.mkfifo(bundle / "redactions.json")
    assert load_error(bundle).code == "missing_file"


def test_a_path_without_the_suffix_is_invalid_manifest_and_a_missing_dir_missing_file(bundle: Path) -> None:
    other = bundle.with_name("run.trace")
    bundle.rename(other)
    assert load_error(other).code == "invalid_manifest"
    assert load_error(bundle).code == "missing_file"
    assert validate_bundle(bundle).codes == ["missing_file"]


def test_validate_bundle_reports_a_load_error_as_one_unreadable_issue_with_its_location(bundle: Path) -> None:
    replace_line(bundle, 2, b"{not json")
    result = validate_bundle(bundle)
    assert [(i.code, i.location) for i in result.issues] == [("invalid_json", "events.jsonl:3")]
    assert result.unreadable
    assert not result.valid
    assert [(c.name, c.passed) for c in result.checks] == [
        ("Manifest structure valid", True),
        ("Event payloads parse", False),
    ]


def test_loading_never_rewrites_a_corrupt_bundle(bundle: Path) -> None:
    data = (bundle / "events.jsonl").read_bytes()[:-5]
    (bundle / "events.jsonl").write_bytes(data)
    load_error(bundle)
    validate_bundle(bundle, strict=False, verify_integrity=True)
    assert (bundle / "events.jsonl").read_bytes() == data
