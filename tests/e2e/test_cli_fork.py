"""`stepfork fork` end to end (issue 5, "fork"): frozen before the step, live after, overrides, the lineage
file, then `stepfork diff PATH OUT`.

The real ``stepfork`` gives fork's exits 0, 1 and 2 and diff's 1 and 0; the repeats of the same wiring (the
other invalid inputs, the allowed live tool, the existing-output sequence) run the console script's ``main``
in-process. The trip agent is recorded once per module and copied into each test's directory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepfork.analysis.forking import read_fork_info
from stepfork.trace import Trace, validate_bundle, verify_bundle_integrity

from .conftest import InProcess, Result, run_cli

TRIP_AGENT = textwrap.dedent(
    """
    from pathlib import Path
    from stepfork.trace import llm_request, trace_tool

    @trace_tool
    def flight_search(destination: str) -> dict:
        Path("search-ran").write_text("yes")
        return {"price": 320, "flight": "B"}

    @trace_tool
    def book(flight: str) -> dict:
        Path("book-ran").write_text("yes")
        return {"booked": flight}

    def run_agent():
        offer = flight_search("Lisbon")
        decision = llm_request(model="fake-1", provider="fake", input={"offer": offer},
                               call=lambda: {"book": offer["price"] < 400})
        if decision["book"]:
            return {"booking": book(offer["flight"]), "price": offer["price"]}
        return {"booking": None, "price": offer["price"]}
    """
)
# steps of the recording: 0 run_start, 1 tool_call flight_search, 2 tool_result, 3 llm_request,
# 4 llm_response, 5 tool_call book, 6 tool_result, 7 run_end


def stepfork(*args: str | Path, cwd: Path) -> Result:
    return run_cli(*args, cwd=cwd)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trip agent and its recording ``trip.sftrace``, recorded once per module (tests read it)."""
    where = tmp_path_factory.mktemp("trip")
    (where / "trip_agent.py").write_text(TRIP_AGENT)
    script = (
        "from stepfork.trace import record\nimport trip_agent\n"
        "with record('trip-agent', output='trip.sftrace') as s:\n    s.set_output(trip_agent.run_agent())\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=where, check=True)
    for marker in ("search-ran", "book-ran"):
        (where / marker).unlink()
    return where


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the recorded project (tests write forks and markers into it) with ``expensive.json``."""
    shutil.copy2(recorded / "trip_agent.py", tmp_path / "trip_agent.py")
    shutil.copytree(recorded / "trip.sftrace", tmp_path / "trip.sftrace")
    (tmp_path / "expensive.json").write_text(json.dumps({"price": 450, "flight": "B"}))
    return tmp_path


def test_an_override_before_the_fork_changes_the_live_decision_and_diff_shows_it(project: Path) -> None:
    proc = stepfork(
        "fork",
        "trip.sftrace",
        "--step",
        "3",
        "-e",
        "trip_agent:run_agent",
        "-o",
        "fork.sftrace",
        "--override",
        "2=expensive.json",
        cwd=project,
    )
    assert proc.code == 0, proc.out + proc.err
    assert not (project / "search-ran").exists()  # frozen before the fork point
    trace = Trace.load(project / "fork.sftrace")
    assert trace.events[-1].output == {"booking": None, "price": 450}
    assert validate_bundle(project / "fork.sftrace", verify_integrity=True).valid
    assert verify_bundle_integrity(project / "fork.sftrace").status == "verified"
    info = read_fork_info(project / "fork.sftrace")
    assert info["fork_step"] == 3
    assert info["parent"]["run_id"] == Trace.load(project / "trip.sftrace").run_id
    assert info["overrides"] == [{"step": 2, "output": {"price": 450, "flight": "B"}}]

    diff = stepfork("diff", "trip.sftrace", "fork.sftrace", "--json", cwd=project)
    assert diff.code == 1
    data = json.loads(diff.out)
    paths = {c["path"] for s in data["steps"] for c in s["changes"]}
    assert {"output.price", "output.book"} <= paths
    assert [(s["kind"], s["label"]) for s in data["steps"] if s["kind"] == "removed"] == [("removed", "book")]


def test_a_tool_after_the_fork_point_runs_only_when_allowed(project: Path, in_process: InProcess) -> None:
    denied = stepfork(
        "fork", "trip.sftrace", "--step", "5", "-e", "trip_agent:run_agent", "-o", "a.sftrace", cwd=project
    )
    assert denied.code == 1
    assert "ReplayPolicyError" in denied.out
    assert not (project / "book-ran").exists()  # refused before the body

    allowed = in_process(  # fork's exit 0 through the real executable: the test above
        "fork",
        "trip.sftrace",
        "--step",
        "5",
        "-e",
        "trip_agent:run_agent",
        "-o",
        "b.sftrace",
        "--allow-live-tool",
        "book",
        cwd=project,
    )
    assert allowed.code == 0, allowed.out + allowed.err
    assert (project / "book-ran").exists()
    assert stepfork("diff", "trip.sftrace", "b.sftrace", cwd=project).code == 0


# the first through the real executable, the others in-process (the same command, one more input check)
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--step", "99"], "step 99 is not a step of trip.sftrace"),
        (
            ["--step", "3", "--override", "5=expensive.json"],
            "--override 5: not the step of a call recorded before",
        ),
        (["--step", "3", "--override", "two=expensive.json"], "Invalid --override two=expensive.json"),
    ],
)
def test_invalid_input_exits_2_before_anything_runs(
    project: Path, extra: list[str], message: str, in_process: InProcess
) -> None:
    run = stepfork if extra == ["--step", "99"] else in_process
    proc = run("fork", "trip.sftrace", "-e", "trip_agent:run_agent", "-o", "x.sftrace", *extra, cwd=project)
    assert proc.code == 2
    assert message in proc.err
    assert not (project / "x.sftrace").exists()


def test_an_existing_output_is_not_replaced_without_overwrite(project: Path, in_process: InProcess) -> None:
    """In-process: fork's exits 0 and 2 come from the real executable in the tests above."""
    args = (
        "fork",
        "trip.sftrace",
        "--step",
        "3",
        "-e",
        "trip_agent:run_agent",
        "-o",
        "f.sftrace",
        "--override",
        "2=expensive.json",
    )
    first = in_process(*args, cwd=project)
    assert first.code == 0, first.out + first.err
    again = in_process(*args, cwd=project)
    assert again.code == 2
    assert "already exists; pass --overwrite" in again.err
    assert in_process(*args, "--overwrite", cwd=project).code == 0
