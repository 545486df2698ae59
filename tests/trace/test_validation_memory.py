"""validate_bundle streams events.jsonl: its memory follows the largest line, not the bundle
(docs/architecture.md, module map: ``validation``).

Peak traced memory (tracemalloc) of a strict validation with integrity must stay within a multiple of the
largest events.jsonl line plus a per-event allowance for the slim record kept of each event, and must not
grow when the same lines make a bundle 20 times larger. Loading the whole trace, as validation did before,
peaked at about 3.4x the bundle (272 MB for the 80 MB bundle here).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stepfork.trace import Trace, ValidationResult, validate_bundle
from stepfork.trace.models import RunEnd, RunStart, RunStatus, ToolCall, ToolResult

T0 = datetime(2026, 10, 8, 10, 0, tzinfo=UTC)
PAYLOAD_BYTES = 2 * 1024 * 1024
CALLS = 20  # 40 payloads of 2 MB: an 80 MB bundle
# Reading a line and hashing its payloads allocates about 18x the line at the peak, nearly all of it the
# output buffer orjson reserves for the worst case of one long string (about 16x its length), transient
# and mostly never touched, but counted by tracemalloc; the line, its parsed value and its bytes are the rest.
LINE_FACTOR = 24
EVENT_ALLOWANCE = 4096  # bytes per event: the slim record (ids, step, type, name) and the checks' indexes
FIXED_ALLOWANCE = 4 * 2**20  # the manifest, redactions, buffers, the result


def _bundle(path: Path, calls: int) -> Path:
    """A completed run of ``calls`` tool calls, each with a 2 MB string in its input and as its output."""
    blob = "abcdefghij" * (PAYLOAD_BYTES // 10)
    trace = Trace(run_id="r", agent_name="a", created_at=T0, status=RunStatus.COMPLETED)
    trace.add(RunStart(id="s", run_id="r", timestamp=T0))
    for i in range(calls):
        call_input = {"i": i, "blob": blob}
        trace.add(ToolCall(id=f"c{i}", run_id="r", parent_id="s", timestamp=T0, name="t", input=call_input))
        trace.add(ToolResult(id=f"o{i}", run_id="r", parent_id=f"c{i}", timestamp=T0, name="t", output=blob))
    trace.add(RunEnd(id="z", run_id="r", parent_id="s", timestamp=T0, run_status=RunStatus.COMPLETED))
    return trace.save(path)


def _peak(call: Callable[[], ValidationResult]) -> tuple[ValidationResult, int]:
    """The result of ``call()`` and the peak memory traced while it ran, in bytes."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - base
    finally:
        if started:
            tracemalloc.stop()


@pytest.fixture(scope="module")
def large_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bundle(tmp_path_factory.mktemp("large") / "large.sftrace", CALLS)


def _validate(bundle: Path) -> tuple[ValidationResult, int]:
    result, peak = _peak(lambda: validate_bundle(bundle, strict=True, verify_integrity=True))
    assert result.valid, result.issues
    assert result.integrity == "verified"
    return result, peak


def _line_sizes(bundle: Path) -> list[int]:
    with (bundle / "events.jsonl").open("rb") as handle:
        return [len(line) for line in handle]


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_strict_validation_with_integrity_of_large_payloads_holds_one_line_at_a_time(
    large_bundle: Path,
) -> None:
    lines = _line_sizes(large_bundle)
    bundle_bytes = sum(p.stat().st_size for p in large_bundle.iterdir())
    assert bundle_bytes > 80 * 10**6

    _, peak = _validate(large_bundle)

    bound = LINE_FACTOR * max(lines) + EVENT_ALLOWANCE * len(lines) + FIXED_ALLOWANCE
    assert peak < bound, f"peak {peak / 2**20:.1f} MB, bound {bound / 2**20:.1f} MB"
    assert peak < bundle_bytes // 2


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_validation_peak_memory_does_not_grow_with_the_number_of_large_payloads(
    large_bundle: Path, tmp_path: Path
) -> None:
    small = _bundle(tmp_path / "small.sftrace", 1)  # the same 2 MB lines, 20 times fewer
    _, small_peak = _validate(small)
    _, large_peak = _validate(large_bundle)

    extra_events = len(_line_sizes(large_bundle)) - len(_line_sizes(small))
    assert large_peak < small_peak + EVENT_ALLOWANCE * extra_events + 2**20, (small_peak, large_peak)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_damaged_payload_in_a_large_bundle_is_still_found_when_streaming(
    large_bundle: Path, tmp_path: Path
) -> None:
    # the hashes are checked line by line, so a changed payload deep in the file is still reported
    copy = tmp_path / "damaged.sftrace"
    copy.mkdir()
    for item in large_bundle.iterdir():
        (copy / item.name).write_bytes(item.read_bytes())
    lines = (copy / "events.jsonl").read_bytes().split(b"\n")
    lines[-3] = lines[-3].replace(b"abcdefghij", b"abcdefghiJ", 1)  # the last tool_result's output
    (copy / "events.jsonl").write_bytes(b"\n".join(lines))

    result = validate_bundle(copy, strict=True, verify_integrity=True)

    assert [(i.code, i.event_id) for i in result.issues] == [
        ("payload_hash_mismatch", f"o{CALLS - 1}"),
        ("integrity_mismatch", None),
    ]
