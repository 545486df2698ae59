"""``stepfork validate`` warns about secrets in clear; ``stepfork redact`` writes a redacted copy that keeps
every replay verdict of its source (issue 14), through the CLI.

The real ``stepfork`` gives redact's exits 0 and 2, validate's warning and replay's exits 0 and 1; the other
cells of the verdict matrix and the refusal sequence run the console script's ``main`` in-process.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from stepfork.trace import fingerprint, validate_bundle
from stepfork.trace.integrity import write_integrity
from stepfork.trace.models import IntegrityStatus

from ..reliability.secret_corpus import CORPUS
from .conftest import ENTRYPOINTS, GOLDEN, InProcess, run_cli

SHAPES = [c for c in CORPUS if c[0] != "registered_custom_secret"]  # registration is per process
VERDICT_LINES = ("Dependency matching", "Execution", "Recorded behavior", "Status", "Final result")


def _verdict(out: str) -> dict[str, str]:
    found = {}
    for label in VERDICT_LINES:
        match = re.search(rf"^{re.escape(label)}:? +(.*)$", out, re.MULTILINE)
        if match:
            found[label] = match.group(1).strip()
    return found


def plant_in_run_start(bundle: Path) -> None:
    """Plant every corpus shape in run_start's input, re-hashed with integrity rewritten: a bundle as an
    implementation with narrower redaction rules would have written it (valid, verified, secrets in clear)."""
    events = bundle / "events.jsonl"
    rows = events.read_text().splitlines()
    event = json.loads(rows[0])
    planted = {
        f"p{i}": (text if header is None else {header: text}) for i, (_, text, _, header) in enumerate(SHAPES)
    }
    event["input"] = {**event["input"], "planted": planted}
    event["input_hash"] = fingerprint(event["input"])
    rows[0] = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    events.write_text("\n".join(rows) + "\n")
    write_integrity(bundle)


# cells through the real executable: replay's exit 0 and exit 1; the rest in-process
REAL = {
    ("successful_run", "golden_agents:weather_agent"),
    ("successful_run", "golden_agents:weather_agent_changed"),
}


@pytest.mark.parametrize(
    ("name", "entrypoint"),
    [
        ("successful_run", "golden_agents:weather_agent"),
        ("successful_run", "golden_agents:weather_agent_changed"),
        ("successful_run", "golden_agents:weather_agent_other_city"),
        ("successful_run", "golden_agents:weather_agent_stops_early"),
        ("failed_tool_run", "golden_agents:flight_agent"),
        ("failed_llm_run", "golden_agents:draft_agent"),
        ("legacy_v01", "golden_agents:weather_agent"),
    ],
)
def test_the_redacted_copy_keeps_the_replay_verdict(
    name: str, entrypoint: str, tmp_path: Path, in_process: InProcess
) -> None:
    stepfork = run_cli if (name, entrypoint) in REAL else in_process
    source = tmp_path / f"{name}.sftrace"
    shutil.copytree(GOLDEN / f"{name}.sftrace", source)
    copy = tmp_path / "copy.sftrace"
    made = stepfork("redact", source, "-o", copy)
    assert made.code == 0, made.text
    before = stepfork("replay", source, "--entrypoint", entrypoint, cwd=ENTRYPOINTS)
    after = stepfork("replay", copy, "--entrypoint", entrypoint, cwd=ENTRYPOINTS)
    assert after.code == before.code, after.text
    assert _verdict(after.out) == _verdict(before.out)
    assert _verdict(before.out)


def test_validate_warns_and_redact_cleans_a_bundle_with_secrets(
    tmp_path: Path, in_process: InProcess
) -> None:
    source = tmp_path / "leaky.sftrace"
    shutil.copytree(GOLDEN / "successful_run.sftrace", source)
    plant_in_run_start(source)

    checked = run_cli("validate", source, "--verify-integrity")
    assert checked.code == 0, checked.text
    assert checked.out.count("warning: unredacted_secret: events.jsonl:1: ") == len(SHAPES)
    assert "Validation passed." in checked.out

    copy = tmp_path / "clean.sftrace"
    made = run_cli("redact", source, "-o", copy)
    assert made.code == 0, made.text
    assert f"{len(SHAPES)} redactions made." in made.out
    assert "events.jsonl:1 evt_success_001 /input/planted/p" in made.out
    for _shape, _text, needle, _header in SHAPES:
        assert needle not in made.text
        assert all(needle.encode() not in p.read_bytes() for p in copy.iterdir())

    result = validate_bundle(copy, verify_integrity=True)
    assert result.integrity == IntegrityStatus.VERIFIED
    assert result.valid
    assert [w for w in result.warnings if w.code == "unredacted_secret"] == []
    listed = json.loads((copy / "redactions.json").read_text())["entries"]
    assert len([e for e in listed if e["event_id"] == "evt_success_001"]) == len(SHAPES)

    replayed = in_process("replay", copy, "--entrypoint", "golden_agents:weather_agent", cwd=ENTRYPOINTS)
    assert replayed.code == 0, replayed.text
    assert _verdict(replayed.out)["Recorded behavior"] == "MATCHED"


def test_redact_refuses_in_place_and_existing_outputs(tmp_path: Path, in_process: InProcess) -> None:
    source = tmp_path / "run.sftrace"
    shutil.copytree(GOLDEN / "successful_run.sftrace", source)
    same = run_cli("redact", source, "-o", source, "--overwrite")
    assert same.code == 2
    assert "redact never writes over its input" in same.err
    copy = tmp_path / "copy.sftrace"
    # the rest of the sequence in-process (redact's exits 0 and 2 come from the real executable above)
    assert in_process("redact", source, "-o", copy).code == 0
    again = in_process("redact", source, "-o", copy)
    assert again.code == 2
    assert "already exists" in again.err
    assert in_process("redact", source, "-o", copy, "--overwrite").code == 0
    as_json = in_process("redact", source, "-o", copy, "--overwrite", "--json")
    assert json.loads(as_json.out) == {"source": str(source), "output": str(copy), "redactions": []}
