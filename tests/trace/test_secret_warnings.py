"""``validate`` warns ``unredacted_secret`` for each secret shape a bundle holds in clear (issue 14).

Every shape of the leak campaign's corpus (tests/reliability/secret_corpus.py) is planted in a copy of a
reference bundle, as the earlier implementation could have written it: validation names the events.jsonl
line and the JSON Pointer of each, never the value, and the verdict (valid, exit code) is unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepfork.trace import register_secret, validate_bundle

from ..conftest import GOLDEN
from ..reliability.secret_corpus import CORPUS, REGISTERED

PLANT_LINE = 4  # successful_run's tool_call (weather_lookup)


def plant(bundle: Path, values: dict[str, object], line: int = PLANT_LINE) -> None:
    """Add ``values`` under ``input.planted`` of the event on ``line`` (hashes and integrity left stale)."""
    events = bundle / "events.jsonl"
    rows = events.read_text().splitlines()
    event = json.loads(rows[line - 1])
    event["input"]["planted"] = values
    rows[line - 1] = json.dumps(event, separators=(",", ":"))
    events.write_text("\n".join(rows) + "\n")


def planted_values() -> tuple[dict[str, object], dict[str, str]]:
    """({key: planted value}, {shape: expected JSON Pointer}) for every corpus shape."""
    values: dict[str, object] = {}
    pointers: dict[str, str] = {}
    for index, (shape, text, _needle, header) in enumerate(CORPUS):
        key = f"p{index}"
        if header is None:
            values[key] = text
            pointers[shape] = f"/input/planted/{key}"
        else:
            values[key] = {header: text}
            pointers[shape] = f"/input/planted/{key}/{header}"
    return values, pointers


def test_a_reference_bundle_has_no_secret_warning() -> None:
    result = validate_bundle(GOLDEN / "successful_run.sftrace")
    assert [w for w in result.warnings if w.code == "unredacted_secret"] == []


@pytest.mark.parametrize(("shape", "text", "needle", "header"), CORPUS, ids=[c[0] for c in CORPUS])
def test_validate_flags_each_planted_secret_shape(
    golden_copy, shape: str, text: str, needle: str, header: str | None
) -> None:
    register_secret(REGISTERED)  # what the registered_custom_secret shape needs (a no-op for the others)
    bundle = golden_copy("successful_run")
    values, pointers = planted_values()
    index = [c[0] for c in CORPUS].index(shape)
    plant(bundle, {f"p{index}": values[f"p{index}"]})
    result = validate_bundle(bundle)
    secrets = [w for w in result.warnings if w.code == "unredacted_secret"]
    assert result.valid  # a warning, not an issue
    assert len(secrets) >= 1, shape
    assert any(pointers[shape] in w.message for w in secrets), [w.message for w in secrets]
    for warning in secrets:
        assert warning.location == f"events.jsonl:{PLANT_LINE}"
        assert warning.event_id == "evt_success_004"
        assert needle not in warning.message


def test_all_shapes_at_once_give_one_warning_per_shape_and_keep_the_verdict(golden_copy) -> None:
    register_secret(REGISTERED)
    bundle = golden_copy("successful_run")
    values, pointers = planted_values()
    plant(bundle, values)
    result = validate_bundle(bundle)
    messages = [w.message for w in result.warnings if w.code == "unredacted_secret"]
    for shape, pointer in pointers.items():
        assert any(f" {pointer} " in m for m in messages), shape
    assert result.issues == []
    dumped = json.dumps(result.to_dict())
    for _shape, _text, needle, _header in CORPUS:
        assert needle not in dumped


def test_a_secret_in_the_manifest_is_reported(golden_copy) -> None:
    bundle = golden_copy("successful_run")
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["agent_name"] = "agent with key AKIAIOSFODNN7EXAMPLE"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    warnings = [w for w in validate_bundle(bundle).warnings if w.code == "unredacted_secret"]
    assert [w.location for w in warnings] == ["manifest.json"]
    assert "/agent_name" in warnings[0].message
    assert "AKIAIOSFODNN7EXAMPLE" not in warnings[0].message
