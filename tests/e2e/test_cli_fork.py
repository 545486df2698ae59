"""`stepfork fork` end to end (issue 5, "fork"): frozen before the step, live after, overrides, the lineage
file, then `stepfork diff PATH OUT`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepfork.analysis.forking import read_fork_info
from stepfork.trace import Trace, validate_bundle, verify_bundle_integrity

STEPFORK = str(Path(sys.executable).parent / "stepfork")

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


def stepfork(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STEPFORK, *map(str, args)], capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "trip_agent.py").write_text(TRIP_AGENT)
    script = (
        "from stepfork.trace import record\nimport trip_agent\n"
        "with record('trip-agent', output='trip.sftrace') as s:\n    s.set_output(trip_agent.run_agent())\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True)
    for marker in ("search-ran", "book-ran"):
        (tmp_path / marker).unlink()
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
    assert proc.returncode == 0, proc.stdout + proc.stderr
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
    assert diff.returncode == 1
    data = json.loads(diff.stdout)
    paths = {c["path"] for s in data["steps"] for c in s["changes"]}
    assert {"output.price", "output.book"} <= paths
    assert [(s["kind"], s["label"]) for s in data["steps"] if s["kind"] == "removed"] == [("removed", "book")]


def test_a_tool_after_the_fork_point_runs_only_when_allowed(project: Path) -> None:
    denied = stepfork(
        "fork", "trip.sftrace", "--step", "5", "-e", "trip_agent:run_agent", "-o", "a.sftrace", cwd=project
    )
    assert denied.returncode == 1
    assert "ReplayPolicyError" in denied.stdout
    assert not (project / "book-ran").exists()  # refused before the body

    allowed = stepfork(
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
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert (project / "book-ran").exists()
    assert stepfork("diff", "trip.sftrace", "b.sftrace", cwd=project).returncode == 0


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
def test_invalid_input_exits_2_before_anything_runs(project: Path, extra: list[str], message: str) -> None:
    proc = stepfork(
        "fork", "trip.sftrace", "-e", "trip_agent:run_agent", "-o", "x.sftrace", *extra, cwd=project
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (project / "x.sftrace").exists()


def test_an_existing_output_is_not_replaced_without_overwrite(project: Path) -> None:
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
    first = stepfork(*args, cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    again = stepfork(*args, cwd=project)
    assert again.returncode == 2
    assert "already exists; pass --overwrite" in again.stderr
    assert stepfork(*args, "--overwrite", cwd=project).returncode == 0
