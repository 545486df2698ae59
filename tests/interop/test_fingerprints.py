"""Every input_hash/output_hash of the reference bundles recomputes (interop notes 2.1, 2.2; issue 2 item 2).

The bundles were written by an earlier implementation; hashes cover the parsed payload value, never the
line text, so each line goes through loads_json and the field named by models.HASHED_FIELDS.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from stepfork.trace.canonical import canonical_json, fingerprint, loads_json
from stepfork.trace.models import HASHED_FIELDS

from ..conftest import REFERENCE

BUNDLES = sorted(REFERENCE.rglob("*.sftrace"))
EXPECTED_EVENTS = 52  # notes 2.2: "All 52 sample events recompute correctly"


def _events(bundle: Path) -> list[dict[str, object]]:
    lines = (bundle / "events.jsonl").read_bytes().splitlines()
    return [loads_json(line) for line in lines]


def _recomputed(event: dict[str, object]) -> tuple[str | None, str | None]:
    input_field, output_field = HASHED_FIELDS[event["type"]]  # type: ignore[index]
    return (
        fingerprint(event[input_field]) if input_field else None,
        fingerprint(event[output_field]) if output_field else None,
    )


def test_reference_bundles_are_present():
    assert len(BUNDLES) == 9, f"expected the 9 reference bundles under {REFERENCE}"


def test_every_reference_hash_recomputes_and_all_52_events_are_checked():
    checked_events = 0
    checked_hashes = 0
    for bundle in BUNDLES:
        for event in _events(bundle):
            expected = (event["input_hash"], event["output_hash"])
            assert _recomputed(event) == expected, f"{bundle.name} event {event['id']}"
            checked_events += 1
            checked_hashes += sum(h is not None for h in expected)
    assert checked_events == EXPECTED_EVENTS
    assert checked_hashes == EXPECTED_EVENTS  # every event type hashes exactly one field except state_change


def test_canonical_bytes_equal_the_python_json_rule_on_every_reference_event():
    for bundle in BUNDLES:
        for event in _events(bundle):
            rule = json.dumps(
                event, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
            ).encode("utf-8")
            assert canonical_json(event) == rule


def test_null_payload_hash_is_the_documented_value():
    # notes 2.2: H(null) is the hash of the LangGraph run_start input.
    assert fingerprint(None) == hashlib.sha256(b"null").hexdigest()
    assert fingerprint(None).startswith("74234e98")


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_each_reference_line_reads_back_to_the_same_value_as_json_loads(bundle):
    for line in (bundle / "events.jsonl").read_bytes().splitlines():
        assert loads_json(line) == json.loads(line)
