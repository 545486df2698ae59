"""Damaged bundles through the library: ``validate_bundle`` and ``Trace.load`` answer every one with a
documented issue code or a ``TraceStorageError`` carrying one, within a bound, and integrity verification
never accepts a changed payload file (issue 7 part 1; docs/format.md "Reading", "Integrity", "Validation";
CASES.md C11).
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from damage import apply, changed_payload, damages, describe, materialize, read_model
from fuzz_agent import record_into
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rel_support import SOAK, one_clear_failure, record_figure, run_cli_batch, scale

from stepfork.trace import Trace, TraceStorageError, validate_bundle

LOAD_CODES = {"missing_file", "invalid_manifest", "invalid_json", "invalid_event", "unsupported_schema"}
INTEGRITY_CODES = {
    "integrity_unverified", "integrity_metadata_invalid", "integrity_algorithm_unsupported", "missing_file",
    "integrity_mismatch",
}  # fmt: skip
VALIDATION_CODES = {
    "event_count_mismatch", "totals_mismatch", "duplicate_event_id", "run_id_mismatch", "step_order",
    "invalid_parent", "parent_not_earlier", "run_start_count", "missing_error_event", "failure_step",
    "step_mismatch", "run_end_position", "status_mismatch", "unpaired_result", "unpaired_call",
    "integrity_unverified", "payload_hash_mismatch",
}  # fmt: skip
DOCUMENTED = LOAD_CODES | INTEGRITY_CODES | VALIDATION_CODES
BOUND_SECONDS = 60
EXAMPLES = scale(150, 3000)
COUNTS: Counter[str] = Counter()


class Hang(BaseException):
    """A library call exceeded BOUND_SECONDS."""


def _alarm(signum: int, frame: object) -> None:
    raise Hang


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes | str]:
    bundle = record_into(tmp_path_factory.mktemp("healthy") / "base.sftrace")
    assert validate_bundle(bundle, strict=True, verify_integrity=True).valid
    return read_model(bundle)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    previous = signal.signal(signal.SIGALRM, _alarm)
    yield tmp_path_factory.mktemp("damaged")
    signal.signal(signal.SIGALRM, previous)
    record_figure("malformed-library", **COUNTS)


def check_library(bundle: Path, *, payload_changed: bool) -> None:
    """The library oracle for one damaged bundle (shared with the CLI campaign's corpus builder)."""
    signal.alarm(BOUND_SECONDS)
    try:
        for strict in (True, False):
            result = validate_bundle(bundle, strict=strict, verify_integrity=True)
            assert set(result.codes) <= DOCUMENTED, result.codes
            assert all(issue.message and "\n" not in issue.message for issue in result.issues)
            if payload_changed:
                assert not result.valid, "a changed payload file passed --verify-integrity"
                assert result.integrity != "verified"
        try:
            Trace.load(bundle)
        except TraceStorageError as exc:
            # what the loader refuses, validate reports as unreadable (both answer with a load code; with
            # several faults they may name different ones: a missing file is checked before a symlink)
            assert exc.code in LOAD_CODES, exc.code
            assert result.unreadable, (exc.code, result.codes)
        else:
            assert not set(result.codes) & (LOAD_CODES - {"missing_file"}), result.codes
    finally:
        signal.alarm(0)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    derandomize=not SOAK,
)
@given(ops=damages(huge_mb=2), n=st.integers(0, 10**9))
def test_every_damaged_bundle_gets_a_documented_code_from_validate_and_load(
    healthy: dict[str, bytes | str], workdir: Path, ops: list, n: int
) -> None:
    damaged = apply(healthy, ops)
    bundle = materialize(damaged, workdir / f"d{n}-{time.monotonic_ns()}.sftrace", workdir)
    COUNTS["inputs"] += 1
    for op in ops:
        COUNTS[op.kind] += 1
    try:
        check_library(bundle, payload_changed=changed_payload(healthy, damaged))
    except Hang:
        pytest.fail(f"validate/load took more than {BOUND_SECONDS} s on {describe(ops)}")
    except RecursionError:
        pytest.fail(f"RecursionError on {describe(ops)}")


@pytest.mark.parametrize("megabytes", [scale(20, 100)])
def test_a_huge_line_is_answered_with_a_code_not_a_crash(
    healthy: dict[str, bytes | str], workdir: Path, megabytes: int
) -> None:
    for closed in (True, False):
        blob = b'"' + b"A" * (megabytes * 2**20) + (b'"' if closed else b"")
        damaged = dict(healthy)
        lines = damaged["events.jsonl"].split(b"\n")  # type: ignore[union-attr]
        lines[1] = lines[1][:-1] + b',"junk":' + blob + b"}" if closed else lines[1] + blob
        damaged["events.jsonl"] = b"\n".join(lines)
        bundle = materialize(damaged, workdir / f"huge-{megabytes}-{closed}.sftrace", workdir)
        COUNTS["inputs"] += 1
        COUNTS[f"separate {megabytes} MB line"] += 1
        check_library(bundle, payload_changed=True)
        # the same bundle through the CLI, under a 2 GB address-space cap
        jobs = [["validate", bundle.name], ["inspect", bundle.name], ["diff", bundle.name, bundle.name]]
        outcomes, rss_kib = run_cli_batch(jobs, cwd=workdir, memory_mb=2048)
        assert [o.code for o in outcomes] == [2, 2, 2], [o.text[-300:] for o in outcomes]
        assert not [one_clear_failure(o) for o in outcomes if one_clear_failure(o)]
        COUNTS["huge_cli_max_rss_mb"] = max(COUNTS["huge_cli_max_rss_mb"], rss_kib // 1024)
