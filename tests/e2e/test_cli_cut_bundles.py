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
from typing import BinaryIO

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


def test_export_reads_a_cut_legacy_bundle_once(
    cut: Path, in_process: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # strict validation read the whole bundle, then load_verified_trace read it again only to word the
    # refusal (s9-cli 4): events.jsonl is opened once, and the line is replay's as before
    from stepfork.trace import _files

    opened: list[str] = []
    real = _files.open_bundle_file

    def counting(bundle: Path, name: str, *, unsafe_code: str) -> BinaryIO:
        opened.append(name)
        return real(bundle, name, unsafe_code=unsafe_code)

    monkeypatch.setattr(_files, "open_bundle_file", counting)
    done = in_process("export", "cut.sftrace", "-e", "agent_mod:run", "--output", "t.py", cwd=cut.parent)
    assert done.code == 2, done.text
    assert done.err.startswith("cut.sftrace: events.jsonl holds 3 event(s) but manifest.json counts 6")
    assert opened.count("events.jsonl") == 1, opened
    assert not (cut.parent / "t.py").exists()


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


WHY_NOT_PARTIAL = (
    "events.jsonl:6: truncated final line (no trailing newline) in the bundle of a finished run (status "
    "completed): the file was cut after the run ended, not by a crash while recording, so --partial "
    "(for runs that did not finish) cannot read it; use an intact copy of the bundle (the recorder's "
    "original) or record the run again"
)


@pytest.fixture
def torn(golden_copy: Callable[..., Path]) -> Path:
    """successful_run (integrity.json and run_end kept) whose final events.jsonl line lost its last bytes."""
    bundle = golden_copy("successful_run", "torn.sftrace")
    events = bundle / "events.jsonl"
    events.write_bytes(events.read_bytes()[:-20])
    return bundle


def test_a_torn_finished_bundle_says_why_partial_cannot_help(torn: Path, in_process: InProcess) -> None:
    before = (torn / "events.jsonl").read_bytes()
    inspect = run_cli("inspect", "torn.sftrace", "--partial", cwd=torn.parent)
    assert inspect.code == 2, inspect.text
    assert inspect.err == f"Unreadable bundle torn.sftrace: {WHY_NOT_PARTIAL}\n"
    plain = in_process("inspect", "torn.sftrace", cwd=torn.parent)  # without --partial: the same reason
    assert (plain.code, plain.err) == (2, inspect.err)
    validate = in_process("validate", "torn.sftrace", "--partial", cwd=torn.parent)
    assert validate.code == 2, validate.text
    assert f"invalid_json: {WHY_NOT_PARTIAL} (events.jsonl:6)" in validate.out.splitlines()[-1]
    assert (torn / "events.jsonl").read_bytes() == before  # never repaired


def test_a_torn_running_bundle_keeps_its_pointer_to_partial(torn: Path) -> None:
    # the same cut in a run that did not finish is a crash: --partial is the way, the reason above is not said
    from stepfork.trace import TraceStorageError, load_trace

    manifest = torn / "manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b'"completed"', b'"running"'))
    with pytest.raises(TraceStorageError) as info:
        load_trace(torn)
    assert str(info.value) == "events.jsonl:6: truncated final line (no trailing newline)"
