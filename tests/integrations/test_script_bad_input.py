"""Bad input to script mode (``stepfork record|replay ... -- python SCRIPT``), through the real CLI: one
line naming the problem and exit 2, never a traceback and nothing written (GUIDE "Bad input"); options
of replay honoured or refused by name; a recorded exit status reproduced only by the same status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

STEPFORK = Path(sys.executable).parent / "stepfork"


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


def one_line_exit_2(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) in (1, 2), done.stderr  # the spec's two-line form for an entrypoint
    return done.stderr


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """``ok.sftrace``: ``agent.py`` (prints its argument, exits with the status it is given) recorded
    with status 0, and ``ex3.sftrace`` recorded with status 3."""
    (tmp_path / "agent.py").write_text("import sys\nprint('ran', sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n")
    for name, status in (("ok", "0"), ("ex3", "3")):
        done = run(["record", "-o", f"{name}.sftrace", "--", sys.executable, "agent.py", status], tmp_path)
        assert done.returncode == int(status), done.stderr
    return tmp_path


def replay(cwd: Path, bundle: str, *extra: str, script: str = "agent.py", arg: str = "0") -> Any:
    return run(["replay", bundle, *extra, "--", sys.executable, script, arg], cwd)


def test_a_tampered_or_unreadable_bundle_is_one_line_as_with_entrypoint(recorded: Path) -> None:
    events = recorded / "ok.sftrace" / "events.jsonl"
    data = bytearray(events.read_bytes())
    data[data.index(b'"run_start"') + 2] ^= 1  # one byte edited
    events.write_bytes(bytes(data))
    tampered = replay(recorded, "ok.sftrace")
    edited = one_line_exit_2(tampered)
    assert "integrity" in edited
    assert tampered.stdout == ""  # the program never started
    with_e = run(["replay", "ok.sftrace", "-e", "agent:main"], recorded)
    assert one_line_exit_2(with_e) == edited  # the same line as the --entrypoint form

    events.write_bytes(bytes(data[: len(data) // 2]))  # cut
    assert "integrity" in one_line_exit_2(replay(recorded, "ok.sftrace"))
    not_a_bundle = one_line_exit_2(replay(recorded, "agent.py"))
    assert not_a_bundle.startswith("Unreadable trace agent.py:")


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_record_refuses_a_bad_output_or_a_missing_script_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("print('ran')\n")
    (tmp_path / "notb.sftrace").mkdir()
    (tmp_path / "notb.sftrace" / "mine.txt").write_text("user data\n")
    (tmp_path / "keep.py").write_text("# user file\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for out, message in (
        (["-o", "x.txt"], ".sftrace"),
        (["-o", "notb.sftrace", "--overwrite"], "not a Stepfork bundle"),
        (["-o", "keep.py", "--overwrite"], ".sftrace"),
        (["-o", "notb.sftrace"], "--overwrite"),
    ):
        done = run(["record", *out, "--", sys.executable, "agent.py"], tmp_path)
        assert message in one_line_exit_2(done)
        assert done.stdout == ""  # the program never started
    missing = run(["record", "--", sys.executable, "nope.py"], tmp_path)
    assert "nope.py" in one_line_exit_2(missing)
    module = run(["record", "-o", "m.sftrace", "--", sys.executable, "-m", "no_such_module_x"], tmp_path)
    assert "no_such_module_x" in one_line_exit_2(module)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "keep.py").read_text() == "# user file\n"


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_replay_refuses_options_it_cannot_honour_by_name(recorded: Path) -> None:
    for extra, option in (
        (["--html", "r.html"], "--html"),
        (["--raise-as", "X=mod:Cls"], "--raise-as"),
        (["--ordering", "sideways"], "--ordering"),
        (["--ignore", "nocolon"], "--ignore"),
        (["--mode", "manual"], "terminal"),  # stdin is a pipe here
        (["-e", "agent:main"], "--entrypoint"),
    ):
        assert option in one_line_exit_2(replay(recorded, "ok.sftrace", *extra)), extra
    assert not (recorded / "r.html").exists()
    bare = one_line_exit_2(run(["replay", "ok.sftrace", "--"], recorded))
    assert "--entrypoint MODULE:FUNCTION" in bare
    assert "-- python SCRIPT ARGS" in bare


def test_replay_passes_the_options_it_can_honour(recorded: Path) -> None:
    done = replay(recorded, "ok.sftrace", "--ordering", "strict", "--verbose", "--mode", "live")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Status: COMPLETED" in done.stdout
    assert "live" in done.stdout
    # --allow-live-tool reaches the library in the child, which refuses it outside live mode (one line)
    frozen = one_line_exit_2(replay(recorded, "ok.sftrace", "--allow-live-tool", "search"))
    assert "allow_live_tools is only valid with mode='live'" in frozen
    live = one_line_exit_2(replay(recorded, "ok.sftrace", "--allow-live-tool", "search", "--mode", "live"))
    assert "allow_live_tools ['search'] not found in trace" in live


def test_a_recorded_exit_status_is_reproduced_only_by_the_same_status(recorded: Path) -> None:
    same = replay(recorded, "ex3.sftrace", arg="3")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "Status: REPRODUCED FAILURE" in same.stdout
    assert "exit status 3" in same.stdout
    assert "ProgramExit" not in same.stdout
    other = replay(recorded, "ex3.sftrace", arg="4")
    assert other.returncode == 1, other.stdout + other.stderr
    assert "expected failure exit status 3, got exit status 4" in other.stdout
    missing = replay(recorded, "ex3.sftrace", script="nope.py")
    assert "nope.py" in one_line_exit_2(missing)
    assert "DIVERGED" not in missing.stdout
