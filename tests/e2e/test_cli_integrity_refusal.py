"""One rule everywhere (issue 13): a bundle that does not match its integrity.json is refused by every
command that replays or rewrites it, with one line naming the file and recommending
``stepfork validate --verify-integrity``, exit 2, before anything runs. Never a manufactured DIVERGED.

Two damages a user meets: events.jsonl cut at a line boundary (a copy that stopped early; the bundle
still parses) and one payload byte edited (still valid JSON). Each command runs as the user types it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from ..conftest import as_legacy_bundle
from .conftest import InProcess, QuickstartExport, cli_env, run_cli


def cut_last_line(bundle: Path) -> None:
    events = bundle / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    events.write_bytes(b"".join(lines[:-1]))


def edit_one_payload_byte(bundle: Path) -> None:
    events = bundle / "events.jsonl"
    data = events.read_bytes()
    assert data.count(b'"FedEx"') >= 1
    events.write_bytes(data.replace(b'"FedEx"', b'"FedEy"', 1))


DAMAGES: dict[str, Callable[[Path], None]] = {"cut": cut_last_line, "byte": edit_one_payload_byte}


def refusal(bundle: str) -> str:
    """The one line every command prints for the quickstart bundle at ``bundle`` (as the user named it)."""
    return (
        f"{bundle}/events.jsonl does not match its digest in integrity.json: the bundle changed after it "
        f"was written and is refused; run `stepfork validate --verify-integrity {bundle}`\n"
    )


COMMANDS: dict[str, tuple[str, ...]] = {
    "replay": ("replay", "notify.sftrace", "--entrypoint", "quickstart:run_agent"),
    "minimize": (
        "minimize",
        "notify.sftrace",
        "--entrypoint",
        "quickstart:run_agent",
        "--expect-output",
        "expected.json",
        "--output",
        "min.sftrace",
    ),
    "fork": ("fork", "notify.sftrace", "--step", "2", "-e", "quickstart:run_agent", "-o", "f.sftrace"),
    "diff": ("diff", "notify.sftrace", "intact.sftrace"),
    "export": (
        "export",
        "notify.sftrace",
        "--pytest",
        "--entrypoint",
        "quickstart:run_agent",
        "--output",
        "t.py",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_refuses_a_bundle_that_fails_integrity_with_one_line(
    quickstart: Path, command: str, damage: str
) -> None:
    shutil.copytree(quickstart / "notify.sftrace", quickstart / "intact.sftrace")
    DAMAGES[damage](quickstart / "notify.sftrace")
    result = run_cli(*COMMANDS[command], cwd=quickstart)
    assert (result.code, result.err) == (2, refusal("notify.sftrace")), result.text
    assert "DIVERGED" not in result.out
    # nothing was written
    assert not any((quickstart / name).exists() for name in ("min.sftrace", "f.sftrace", "t.py"))


@pytest.mark.parametrize(("kind", "why"), [("symlink", "a symbolic link"), ("fifo", "not a regular file")])
def test_a_symlinked_or_fifo_events_file_is_refused_with_validates_reason(
    quickstart: Path, in_process: InProcess, kind: str, why: str
) -> None:
    # validate names what is there; replay, export, diff (every load through the integrity check) said
    # "is listed in integrity.json but missing" (s9-cli 2)
    shutil.copytree(quickstart / "notify.sftrace", quickstart / "intact.sftrace")
    events = quickstart / "notify.sftrace" / "events.jsonl"
    (quickstart / "outside.jsonl").write_bytes(events.read_bytes())
    events.unlink()
    events.symlink_to(quickstart / "outside.jsonl") if kind == "symlink" else os.mkfifo(events)
    validated = in_process("validate", "notify.sftrace", cwd=quickstart)
    reason = f"notify.sftrace/events.jsonl: {why} (refused)"
    assert reason in validated.out, validated.text  # validate's verdict is its result: stdout (issue 32)
    line = (
        f"{reason}; a bundle file must be a regular file inside the bundle; "
        "run `stepfork validate --verify-integrity notify.sftrace`\n"
    )
    first = run_cli(*COMMANDS["replay"], cwd=quickstart) if kind == "symlink" else None
    for command in ("replay", "export", "diff"):
        done = first if command == "replay" and first else in_process(*COMMANDS[command], cwd=quickstart)
        assert (done.code, done.err) == (2, line), (command, done.text)
    assert not (quickstart / "t.py").exists()


def test_diff_names_the_candidate_when_it_is_the_damaged_one(quickstart: Path) -> None:
    shutil.copytree(quickstart / "notify.sftrace", quickstart / "candidate.sftrace")
    cut_last_line(quickstart / "candidate.sftrace")
    result = run_cli("diff", "notify.sftrace", "candidate.sftrace", cwd=quickstart)
    assert (result.code, result.err) == (2, refusal("candidate.sftrace")), result.text


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_run_reports_could_not_execute_with_the_same_line(
    quickstart: Path, damage: str, quickstart_export: QuickstartExport
) -> None:
    # test_fixed.py beside the intact bundle (written before the damage: export refuses it after)
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    DAMAGES[damage](quickstart / "notify.sftrace")
    result = run_cli("run", "test_fixed.py", "--receipt", "r.json", cwd=quickstart)
    assert result.code == 2, result.text
    bundle = str((quickstart / "notify.sftrace").resolve())
    line = refusal(bundle).rstrip("\n")
    assert f"{line}; the check cannot run, so this is not a regression\n" in result.out
    receipt = json.loads((quickstart / "r.json").read_text(encoding="utf-8"))
    assert (receipt["verdict"], receipt["reason"]) == ("could_not_execute", "bundle_unreadable")


def test_the_exported_test_run_by_pytest_fails_with_the_same_line(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    # test_fixed.py beside the intact bundle (written before the damage: export refuses it after)
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    cut_last_line(quickstart / "notify.sftrace")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_fixed.py", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=quickstart,
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "does not match its digest in integrity.json" in done.stdout
    assert "stepfork validate --verify-integrity" in done.stdout
    assert "divergence" not in done.stdout


MARKED = textwrap.dedent(
    """
    from quickstart import run_agent
    import pytest

    @pytest.mark.stepfork("notify.sftrace")
    def test_replayed():
        run_agent()
    """
)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_the_pytest_marker_errors_with_the_same_line_and_no_traceback(quickstart: Path, damage: str) -> None:
    (quickstart / "test_marked.py").write_text(MARKED, encoding="utf-8")
    DAMAGES[damage](quickstart / "notify.sftrace")
    env = {**cli_env(), "PYTHONPATH": os.pathsep.join([str(quickstart), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_marked.py", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=quickstart,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "1 error" in out, out
    bundle = str(quickstart / "notify.sftrace")
    assert refusal(bundle).rstrip("\n") in out, out
    # once in the error's report, not again as "during handling of" (the short summary repeats it in full
    # where pytest does not truncate it: with CI set)
    report = out.split("short test summary info")[0]
    assert report.count(refusal(bundle).rstrip("\n")) == 1, out
    assert "another exception occurred" not in out
    assert "Traceback" not in out
    assert "load_verified_trace" not in out


def test_a_legacy_bundle_whose_stored_fingerprint_disagrees_is_refused_saying_so(quickstart: Path) -> None:
    """No integrity.json (a legacy bundle) but an edited payload byte: the stored output hash catches it.
    Refused before the agent runs, in one line naming the step and the code, as ``export`` refuses it
    (before, the replay ran up to the call and said REJECTED), never DIVERGED."""
    bundle = as_legacy_bundle(quickstart / "notify.sftrace")
    edit_one_payload_byte(bundle)
    result = run_cli("replay", "notify.sftrace", "--entrypoint", "quickstart:run_agent", cwd=quickstart)
    assert (result.code, result.out) == (2, ""), result.text
    assert result.err == (
        "notify.sftrace: step 2: output_hash does not match the output payload (payload_hash_mismatch): the "
        "bundle changed after it was written and is refused; run `stepfork validate --verify-integrity "
        "notify.sftrace`\n"
    )


def remove_integrity_after_an_edit(bundle: Path) -> None:
    """NEWCOMER2 14: the recorded carrier edited, its stored output hash set to null and integrity.json
    deleted, so that the bundle reads like a legacy one, although its manifest names this Stepfork."""
    events = bundle / "events.jsonl"
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    result = next(event for event in lines if event["type"] == "tool_result")
    result["output"]["carrier"] = "UPS"
    result["output_hash"] = None
    events.write_text("".join(json.dumps(event) + "\n" for event in lines), encoding="utf-8")
    (bundle / "integrity.json").unlink()


def removed_integrity(bundle: str) -> str:
    return (
        f"{bundle}/integrity.json: missing, but manifest.json says Stepfork 0.2.0 wrote this finished run, "
        "and it writes integrity.json at the end of every run it finishes: the bundle changed after it was "
        f"written and is refused; run `stepfork validate --verify-integrity {bundle}`\n"
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_bundle_of_this_version_without_its_integrity_json_is_refused_not_replayed_as_legacy(
    quickstart: Path, command: str
) -> None:
    shutil.copytree(quickstart / "notify.sftrace", quickstart / "intact.sftrace")
    remove_integrity_after_an_edit(quickstart / "notify.sftrace")
    result = run_cli(*COMMANDS[command], cwd=quickstart)
    assert (result.code, result.err) == (2, removed_integrity("notify.sftrace")), result.text
    assert "DIVERGED" not in result.out
    assert "UPS" not in result.text
    assert not any((quickstart / name).exists() for name in ("min.sftrace", "f.sftrace", "t.py"))


def test_validate_inspect_redact_and_run_say_the_same_of_it(
    quickstart: Path, quickstart_export: QuickstartExport
) -> None:
    quickstart_export(quickstart, "quickstart:run_agent_fixed", "test_fixed.py")
    remove_integrity_after_an_edit(quickstart / "notify.sftrace")
    validated = run_cli("validate", "--verify-integrity", "notify.sftrace", cwd=quickstart)
    assert validated.code == 2, validated.text  # not 3, "legacy bundle"
    assert "missing_file: integrity.json is missing, but manifest.json says Stepfork 0.2.0" in validated.out
    assert "UNVERIFIED" not in validated.text
    inspected = run_cli("inspect", "notify.sftrace", cwd=quickstart)
    assert "MISMATCH" in inspected.out, inspected.text
    assert "legacy" not in inspected.out
    redacted = run_cli("redact", "notify.sftrace", "-o", "r.sftrace", cwd=quickstart)
    assert redacted.code == 2, redacted.text
    assert not (quickstart / "r.sftrace").exists()
    ran = run_cli("run", "test_fixed.py", "--json", cwd=quickstart)
    receipt = json.loads(ran.out)
    assert (ran.code, receipt["verdict"], receipt["reason"]) == (2, "could_not_execute", "bundle_unreadable")


def test_a_legacy_bundle_still_replays_without_integrity_json(quickstart: Path) -> None:
    # the earlier implementation's bundles have no integrity.json: replayed as before
    legacy = as_legacy_bundle(quickstart / "notify.sftrace")
    result = run_cli("replay", legacy.name, "--entrypoint", "quickstart:run_agent", cwd=quickstart)
    assert result.code == 0, result.text
    assert "Recorded behavior: MATCHED" in result.out
