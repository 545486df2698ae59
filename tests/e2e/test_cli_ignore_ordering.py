"""Issue 12: `--ignore TOOL:PATH` and `--ordering` on replay and export (written into the test), the
marker's `ignore`, through the real CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import InProcess, run_cli

AGENT = """
import itertools
from stepfork.trace import record, trace_tool

# a time a day ahead (a deadline the agent computes): outside the run, so no reading of its clock, whose
# own readings are fresh (docs/diff.md "Clock readings"); it differs on every run and needs --ignore
_clock = itertools.count(int(__import__("time").time() * 1000) + 86_400_000)


@trace_tool
def search(query: str, requested_at: int) -> list[str]:
    return [query]


def run() -> list[str]:
    return search("shoes", next(_clock))


def record_to(path: str) -> None:
    with record("clock", output=path) as session:
        session.set_output(run())
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clock agent and its recording ``b.sftrace``, recorded once per module (tests read it)."""
    where = tmp_path_factory.mktemp("clock")
    (where / "clock_agent.py").write_text(AGENT)
    done = subprocess.run(
        [sys.executable, "-c", "import clock_agent; clock_agent.record_to('b.sftrace')"],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return where


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the recorded project (tests write exports and forks into it)."""
    shutil.copy2(recorded / "clock_agent.py", tmp_path / "clock_agent.py")
    shutil.copytree(recorded / "b.sftrace", tmp_path / "b.sftrace")
    return tmp_path


def test_replay_ignore_accepts_the_clock_and_reports_it(project: Path) -> None:
    plain = run_cli("replay", "b.sftrace", "--entrypoint", "clock_agent:run", cwd=project)
    assert plain.code == 1
    assert "$.requested_at" in plain.out
    args = ("replay", "b.sftrace", "--entrypoint", "clock_agent:run", "--ignore", "search:$.requested_at")
    ignored = run_cli(*args, cwd=project)
    assert ignored.code == 0, ignored.text
    assert "ignored: call #1 search (step 1) differs at $.requested_at" in ignored.out


@pytest.mark.parametrize(
    ("option", "value"), [("--ignore", "requested_at"), ("--ignore", ":$.x"), ("--ordering", "random")]
)
def test_bad_values_are_refused_with_exit_2(
    project: Path, option: str, value: str, in_process: InProcess
) -> None:
    # the first cell through the real executable for each command, the others in-process
    run = run_cli if value == "requested_at" else in_process
    for command in ("replay", "export"):
        extra = ["--pytest"] if command == "export" else []
        args = (command, "b.sftrace", *extra, "--entrypoint", "clock_agent:run", option, value)
        done = run(*args, cwd=project)
        assert done.code == 2, done.text
        assert f"Invalid {option}" in done.err
        assert len(done.err.strip().splitlines()) == 1


def test_export_writes_ordering_and_ignore_into_the_test_and_it_passes(project: Path) -> None:
    done = run_cli(
        "export",
        "b.sftrace",
        "--pytest",
        "--entrypoint",
        "clock_agent:run",
        "--output",
        "test_clock.py",
        "--ignore",
        "search:$.requested_at",
        "--ordering",
        "strict",
        cwd=project,
    )
    assert done.code == 0, done.text
    source = (project / "test_clock.py").read_text()
    assert "ORDERING = 'strict'" in source
    assert "IGNORE = {'search': ['$.requested_at']}" in source
    ran = run_cli("run", "test_clock.py", cwd=project)
    assert ran.code == 0, ran.text
    assert "PASSED" in ran.out


def test_the_marker_takes_ignore(project: Path) -> None:
    (project / "test_marked.py").write_text(
        textwrap.dedent(
            """
            import pytest
            import clock_agent


            @pytest.mark.stepfork("b.sftrace", ignore={"search": ["$.requested_at"]})
            def test_clock(stepfork):
                assert clock_agent.run() == ["shoes"]
                assert [d.path for d in stepfork.ignored_differences] == ["$.requested_at"]


            @pytest.mark.stepfork("b.sftrace")
            def test_clock_without_ignore(stepfork):
                clock_agent.run()
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "test_marked.py"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "1 passed" in done.stdout, done.stdout
    assert "1 failed" in done.stdout, done.stdout


@pytest.mark.parametrize(
    "command",
    [
        ("minimize", "b.sftrace", "--entrypoint", "clock_agent:run"),
        ("fork", "b.sftrace", "--step", "1", "--entrypoint", "clock_agent:run", "--output", "f.sftrace"),
    ],
    ids=["minimize", "fork"],
)
def test_minimize_and_fork_refuse_a_bad_ordering(project: Path, command: tuple[str, ...]) -> None:
    done = run_cli(*command, "--ordering", "random", cwd=project)
    assert done.code == 2, done.text
    assert "Invalid --ordering 'random'" in done.err


def test_fork_with_an_explicit_ordering_runs(project: Path) -> None:
    args = ("fork", "b.sftrace", "--step", "3", "--entrypoint", "clock_agent:run", "--output", "f.sftrace")
    done = run_cli(*args, "--ordering", "strict", cwd=project)
    assert done.code in (0, 1), done.text
    assert (project / "f.sftrace" / "manifest.json").exists()


UUID_AGENT = """
import random
import uuid
from stepfork.trace import record, trace_tool


@trace_tool
def fetch(query: str, request_id: str) -> list[str]:
    return [query]


def run() -> list[str]:
    # an id from a random.Random the agent makes itself (seeded by the system, not through os.urandom's
    # wrapper): replay cannot know it was minted nor start it where the recording did (a uuid4 would be
    # renamed, tests/replay/test_noise_origin.py; the global generator restarts where the recording's did,
    # tests/replay/test_noise_random_clock.py)
    return fetch("shoes", str(uuid.UUID(int=random.Random().getrandbits(128))))


def record_to(path: str) -> None:
    with record("uuid", output=path) as session:
        session.set_output(run())
"""


def test_a_divergence_on_a_random_id_hints_at_ignore(tmp_path: Path) -> None:
    (tmp_path / "uuid_agent.py").write_text(UUID_AGENT)
    done = subprocess.run(
        [sys.executable, "-c", "import uuid_agent; uuid_agent.record_to('u.sftrace')"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    plain = run_cli("replay", "u.sftrace", "--entrypoint", "uuid_agent:run", cwd=tmp_path)
    assert plain.code == 1, plain.text
    assert "if this value is random or a clock, ignore it: --ignore 'fetch:$.request_id'" in plain.text
    args = ("replay", "u.sftrace", "--entrypoint", "uuid_agent:run", "--ignore", "fetch:$.request_id")
    hinted = run_cli(*args, cwd=tmp_path)
    assert hinted.code == 0, hinted.text
