"""BundleWriter: the crash-safe incremental writer (docs/architecture.md "Crash safety", C6, C11)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stepfork.trace.bundle import BundleWriter, Trace, load_trace, prepare_event, save_trace
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.integrity import verify_bundle_integrity
from stepfork.trace.models import (
    IntegrityStatus,
    RedactionEntry,
    RunEnd,
    RunStart,
    RunStatus,
    ToolCall,
    ToolResult,
    TraceManifest,
    TraceTotals,
)
from stepfork.trace.validation import validate_bundle

T0 = datetime(2026, 10, 8, 10, 0, tzinfo=UTC)
EMPTY_REDACTIONS = b'{\n  "schema_version": "0.1",\n  "entries": []\n}\n'


def manifest(status: RunStatus = RunStatus.RUNNING, **totals: int) -> TraceManifest:
    return TraceManifest(
        run_id="r", agent_name="a", created_at=T0, status=status, totals=TraceTotals(**totals)
    )


def start() -> RunStart:
    return RunStart(id="s", run_id="r", timestamp=T0, input={"q": 1})


def test_opening_writes_a_running_manifest_and_empty_redactions_at_once(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path / "run.sftrace", manifest())
    path = tmp_path / "run.sftrace"
    assert load_trace(path).status == RunStatus.RUNNING
    assert (path / "redactions.json").read_bytes() == EMPTY_REDACTIONS
    assert (path / "events.jsonl").read_bytes() == b""
    assert not (path / "integrity.json").exists()
    assert sorted(p.name for p in path.iterdir()) == ["events.jsonl", "manifest.json", "redactions.json"]
    writer.close()


def test_a_killed_recorder_leaves_every_flushed_event_and_a_bundle_partial_mode_accepts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.sftrace"
    writer = BundleWriter(path, manifest())
    writer.append_event(start())
    writer.append_event(ToolCall(id="c", run_id="r", parent_id="s", step=1, timestamp=T0, name="t", input={}))
    writer.flush()
    writer.append_event(
        ToolResult(id="o", run_id="r", parent_id="c", step=2, timestamp=T0, name="t", output=1)
    )
    # no flush, no finalize: the process dies here (the buffer is lost, the file is what the OS has)
    assert [e.id for e in load_trace(path).events] == ["s", "c"]
    partial = validate_bundle(path, strict=False)
    assert partial.valid, partial.issues
    strict = validate_bundle(path)
    assert strict.codes == ["event_count_mismatch", "totals_mismatch"]
    assert validate_bundle(path, verify_integrity=True, strict=False).legacy


def test_the_buffer_is_written_out_when_it_reaches_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "run.sftrace"
    writer = BundleWriter(path, manifest(), buffer_bytes=1)
    writer.append_event(start())
    assert len(load_trace(path).events) == 1
    writer.close()


def test_finalize_rewrites_manifest_and_redactions_and_writes_integrity_last(tmp_path: Path) -> None:
    path = tmp_path / "run.sftrace"
    writer = BundleWriter(path, manifest())
    writer.append_event(start())
    entries = writer.append_event(
        ToolCall(
            id="c",
            run_id="r",
            parent_id="s",
            step=1,
            timestamp=T0,
            name="t",
            input={"password": "p4ss-w0rd!"},
        )
    )
    writer.append_event(
        ToolResult(id="o", run_id="r", parent_id="c", step=2, timestamp=T0, name="t", output=1)
    )
    writer.append_event(
        RunEnd(id="z", run_id="r", parent_id="s", step=3, timestamp=T0, run_status=RunStatus.COMPLETED)
    )
    final = manifest(RunStatus.COMPLETED, events=4, tool_calls=1)
    assert writer.finalize(final, entries) == path
    assert verify_bundle_integrity(path).status == IntegrityStatus.VERIFIED
    result = validate_bundle(path, verify_integrity=True)
    assert result.valid, result.issues
    trace = load_trace(path)
    assert trace.manifest == final
    assert [(e.event_id, e.path) for e in trace.redactions] == [("c", "/input/password")]
    assert b"p4ss-w0rd!" not in (path / "events.jsonl").read_bytes()
    with pytest.raises(TraceStorageError) as info:
        writer.append_event(start())
    assert info.value.code == "writer_closed"


def test_writer_bytes_equal_save_trace_bytes(tmp_path: Path) -> None:
    trace = Trace(run_id="r", agent_name="a", created_at=T0, status=RunStatus.COMPLETED)
    trace.add(start())
    trace.add(RunEnd(id="z", run_id="r", parent_id="s", timestamp=T0, run_status=RunStatus.COMPLETED))
    saved = save_trace(trace, tmp_path / "saved.sftrace")
    writer = BundleWriter(tmp_path / "written.sftrace", manifest())
    for event in trace.events:
        writer.append(prepare_event(event)[0])
    written = writer.finalize(trace.manifest.model_copy(update={"totals": TraceTotals(events=2)}), [])
    for name in ("manifest.json", "events.jsonl", "redactions.json", "integrity.json"):
        assert (saved / name).read_bytes() == (written / name).read_bytes(), name


def test_concurrent_threads_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.sftrace"
    writer = BundleWriter(path, manifest(), buffer_bytes=512)
    writer.append_event(start())

    def work(n: int) -> None:
        for i in range(200):
            event = ToolCall(
                id=f"c{n}-{i}", run_id="r", parent_id="s", timestamp=T0, name="t", input={"pad": "x" * i}
            )
            writer.append_event(event)
            if i % 7 == 0:
                writer.flush()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    events = load_trace(path).events
    assert len(events) == 801
    assert len({e.id for e in events}) == 801


def test_append_refuses_anything_but_one_line(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path / "run.sftrace", manifest())
    for bad in (b'{"a":1}', b'{"a":1}\n{"b":2}\n'):
        with pytest.raises(ValueError):
            writer.append(bad)
    writer.close()


def test_opening_over_an_existing_bundle_needs_overwrite_and_then_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "run.sftrace"
    BundleWriter(path, manifest()).finalize(
        manifest(RunStatus.COMPLETED), [RedactionEntry(event_id="x", path="/a", reason="r")]
    )
    with pytest.raises(TraceStorageError) as info:
        BundleWriter(path, manifest())
    assert info.value.code == "already_exists"
    BundleWriter(path, manifest(), overwrite=True).close()
    assert not (path / "integrity.json").exists()
    assert (path / "redactions.json").read_bytes() == EMPTY_REDACTIONS


def test_opening_a_path_without_the_suffix_is_invalid_path(tmp_path: Path) -> None:
    with pytest.raises(TraceStorageError) as info:
        BundleWriter(tmp_path / "run", manifest())
    assert info.value.code == "invalid_path"


def test_write_line_writes_whole_lines_through_partial_writes_and_refuses_a_bad_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the recorder's path (EventLog.emit): a flushed line goes to the OS without the buffer; a write
    # the OS cuts short (a signal, a full pipe) is completed, never left half written
    import os

    import stepfork.trace.bundle as bundle

    real_write = os.write
    monkeypatch.setattr(bundle.os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    writer = BundleWriter(tmp_path / "run.sftrace", manifest())
    lines = [b'{"n":%d,"text":"%s"}\n' % (i, b"x" * (i * 13)) for i in range(12)]
    for i, line in enumerate(lines):
        writer.write_line(line, flush=i % 3 != 1)  # flushed lines and buffered ones, interleaved
    for bad in (b"{}", b"{}\n{}\n", b"\n{}\n"):
        with pytest.raises(ValueError, match="one newline"):
            writer.write_line(bad)
    writer.close()
    assert (tmp_path / "run.sftrace" / "events.jsonl").read_bytes() == b"".join(lines)
    assert writer.events_written == len(lines)
    with pytest.raises(TraceStorageError):
        writer.write_line(b"{}\n")
