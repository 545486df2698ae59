"""Bundles cut short, through the real CLI (s8-ux 2-4): a legacy bundle of a finished run whose
events.jsonl was cut at a line boundary (no integrity.json, fewer events than the manifest counts), and a
finished bundle whose final events.jsonl line is torn.

- ``export`` refuses the cut legacy bundle with replay's own ``event_count_mismatch`` line, exit 2;
- ``inspect`` shows it with a warning (and ``incomplete`` in ``--json``): N events of the M counted;
- a torn finished bundle's refusal says why ``--partial`` cannot help and what to do instead.

One real ``stepfork`` per command and exit code; the comparisons in-process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import InProcess, run_cli

AGENT = "def run(prompt=None):\n    return prompt\n"


@pytest.fixture
def cut(golden_copy: Callable[..., Path]) -> Path:
    """successful_run without integrity.json, its events.jsonl cut to its first 3 of 6 lines."""
    bundle = golden_copy("successful_run", "cut.sftrace")
    (bundle / "integrity.json").unlink()
    events = bundle / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    assert len(lines) == 6
    events.write_bytes(b"".join(lines[:3]))
    (bundle.parent / "agent_mod.py").write_text(AGENT)
    return bundle


def test_export_refuses_a_cut_legacy_bundle_with_replays_line(cut: Path, in_process: InProcess) -> None:
    work = cut.parent
    export = run_cli("export", "cut.sftrace", "--entrypoint", "agent_mod:run", "--output", "t.py", cwd=work)
    assert export.code == 2, export.text
    assert export.err == (
        "cut.sftrace: events.jsonl holds 3 event(s) but manifest.json counts 6 (totals.events) for a "
        "finished run: the bundle was cut or edited and is refused; run `stepfork validate cut.sftrace`\n"
    )
    assert "strict validation" not in export.err
    assert not (work / "t.py").exists()
    replay = in_process("replay", "cut.sftrace", "--entrypoint", "agent_mod:run", cwd=work)
    assert (replay.code, replay.err) == (2, export.err)
    # the library says it too, with the exit-2 code export maps it to
    from stepfork.analysis.export import ExportError, export_pytest_test

    with pytest.raises(ExportError) as info:
        export_pytest_test(trace_path=cut, entrypoint="agent_mod:run", output_path=work / "t.py")
    assert info.value.code == "invalid_trace"
    assert str(info.value) == export.err.replace("cut.sftrace", str(cut)).rstrip("\n")


def test_inspect_warns_that_a_cut_bundle_is_incomplete(cut: Path, in_process: InProcess) -> None:
    human = run_cli("inspect", cut)
    assert human.code == 0, human.text
    assert (
        "Warning:       incomplete bundle: 3 events of the 6 the manifest counts; cut or edited after the "
        "run ended (replay and export refuse it; `stepfork validate` lists its problems)"
    ) in human.out.splitlines()
    data = in_process("inspect", cut, "--json")
    assert data.code == 0, data.text
    found = json.loads(data.out)
    assert found["incomplete"] == {"events": 3, "manifest_events": 6}
    assert len(found["timeline"]) == found["events"] == 3


def test_inspect_of_a_whole_bundle_has_no_incomplete_warning(
    golden_copy: Callable[..., Path], in_process: InProcess
) -> None:
    whole = golden_copy("successful_run")
    (whole / "integrity.json").unlink()  # legacy, but every event is there
    data = in_process("inspect", whole, "--json")
    assert data.code == 0, data.text
    assert "incomplete" not in json.loads(data.out)
    assert "incomplete bundle" not in in_process("inspect", whole).out
