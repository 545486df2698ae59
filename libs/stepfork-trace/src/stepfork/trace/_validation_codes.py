"""The words of a validation verdict: issue codes and the names of the checks ``stepfork validate`` prints.

Split from :mod:`stepfork.trace._validation_types` (which re-exports every name, as
``stepfork.trace.validation`` does) so that the quick verdict of ``stepfork validate``
(:mod:`stepfork.trace._quick_validation`) names its checks without importing dataclasses (issue 31, cold
start). The meaning of each code is in ``stepfork.trace.validation``'s docstring and docs/format.md
(interop/REFERENCE-NOTES.md section 4).
"""

from __future__ import annotations

UNREADABLE_CODES = frozenset(
    {
        "missing_file",
        "invalid_json",
        "invalid_manifest",
        "invalid_event",
        "unsupported_schema",
        "integrity_metadata_invalid",
        "integrity_algorithm_unsupported",
        # a bundle URL (stepfork.trace.remote): an unfinished upload, no fsspec, a bad URL
        "incomplete_bundle",
        "remote_support_missing",
        "invalid_path",
    }
)
"""Codes that make ``stepfork validate`` exit 2 (notes 4, exit codes)."""

TORN_FINAL_LINE = "torn_final_line"
"""Warning (partial mode, manifest ``running``): events.jsonl ends in a line a killed recorder was writing."""

RUN_INCOMPLETE = "run_incomplete"
"""Warning (both modes): a ``running`` manifest whose totals were never written and no run_end."""

TIMESTAMP_ORDER = "timestamp_order"
"""Warning (both modes): an event's timestamp is earlier than that of an event on an earlier line."""

STRICT_CODES = frozenset(
    {
        "run_start_count",
        "missing_error_event",
        "step_mismatch",
        "run_end_position",
        "unpaired_call",
        "unpaired_result",
        "status_mismatch",
        "failure_step",
    }
)
ID_CODES = frozenset(
    {"run_id_mismatch", "duplicate_event_id", "step_order", "invalid_parent", "parent_not_earlier"}
)
COUNT_CODES = frozenset({"event_count_mismatch", "totals_mismatch"})
INTEGRITY_CODES = frozenset(
    {
        "integrity_unverified",
        "integrity_metadata_invalid",
        "integrity_algorithm_unsupported",
        "integrity_mismatch",
        "payload_hash_mismatch",
        "missing_file",
    }
)

CHECK_MANIFEST = "Manifest structure valid"
CHECK_EVENTS = "Event payloads parse"
CHECK_IDS = "Run IDs consistent"
CHECK_COUNT = "Event count matches"
CHECK_STRICT = "Strict execution checks"
CHECK_INTEGRITY = "Integrity verified"


def check_names(*, strict: bool, integrity: bool) -> list[str]:
    """The checks ``stepfork validate`` prints, in order: the four common checks, then the strict check
    (``strict`` only) and the integrity check (``integrity`` only) (spec cli-reference.txt, validate)."""
    names = [CHECK_MANIFEST, CHECK_EVENTS, CHECK_IDS, CHECK_COUNT]
    if strict:
        names.append(CHECK_STRICT)
    if integrity:
        names.append(CHECK_INTEGRITY)
    return names


FAILED_BY: dict[str, frozenset[str]] = {
    CHECK_MANIFEST: frozenset({"invalid_manifest"}),
    CHECK_EVENTS: frozenset(),
    CHECK_IDS: ID_CODES,
    CHECK_COUNT: COUNT_CODES,
    CHECK_STRICT: STRICT_CODES,
    CHECK_INTEGRITY: INTEGRITY_CODES,
}
"""The issue codes that fail each check."""
