"""What counts as the same failure for ``minimize`` (docs/minimize.md): by default the same failure of the
agent, whatever divergences removed calls cause (spec "minimize"), reported honestly as a bundle that does
not replay cleanly; with ``clean_replay`` also the same replay, so the bundle replays as its original does
(the search starts from the calls the replay reached and falls back to the full search; the final bundle is
checked the same way)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepfork.analysis import MinimizeError, MinimizeResult, minimize_trace
from stepfork.replay import replay_entrypoint
from stepfork.trace import Trace

# ``fetch`` calls; ``RECORDING`` is set while the bundle is recorded, so an agent can behave differently
# under replay (the drift a divergence comes from). Attempts run in the import root (``tmp_path``).
HEADER = """
import os
from stepfork.trace import trace_tool

RECORDING = bool(os.environ.get("MINIMIZE_TEST_RECORDING"))

@trace_tool
def fetch(source: int) -> dict:
    return {"source": source}

def attempt_number():
    with open("attempts.log", "a") as f:
        f.write("x\\n")
    with open("attempts.log") as f:
        return len(f.read().splitlines())
"""


def record(tmp_path: Path, module: str, body: str) -> Path:
    """Write ``<module>.py`` (HEADER + body), record ``run_agent`` (its ValueError expected), return the
    bundle path."""
    (tmp_path / f"{module}.py").write_text(HEADER + textwrap.dedent(body))
    script = (
        f"from stepfork.trace import record\nimport {module}\n"
        "try:\n    with record('m', output='m.sftrace'):\n"
        f"        {module}.run_agent()\nexcept ValueError:\n    pass\n"
    )
    env = {**os.environ, "MINIMIZE_TEST_RECORDING": "1"}
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True, env=env)
    (tmp_path / "attempts.log").unlink(missing_ok=True)
    return tmp_path / "m.sftrace"


def minimize(
    bundle: Path, module: str, *, clean_replay: bool = False, workers: int | None = None
) -> MinimizeResult:
    """Minimize ``bundle`` through ``<module>:run_agent`` into ``min.sftrace`` beside it."""
    root = bundle.parent
    return minimize_trace(
        bundle,
        f"{module}:run_agent",
        output=root / "min.sftrace",
        overwrite=True,
        import_root=root,
        clean_replay=clean_replay,
        workers=workers,
    )


def sources(bundle: Path) -> list[int]:
    return [e.input["source"] for e in Trace.load(bundle).events if e.type == "tool_call"]


CATCHING_AGENT = """
def run_agent():
    for source in range(6):
        try:
            fetch(source)
        except Exception:
            pass
    raise ValueError("bug hit")
"""


def test_by_default_calls_the_failure_does_not_need_are_removed_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    # The newcomer's agent: it catches every replay error, then fails. Without any fetch it still raises
    # the same ValueError, so the spec's "smallest set of events that preserves the original failure" is
    # none of them; its replay diverges at each fetch the agent still makes, and the result says so.
    bundle = record(tmp_path, "catching_agent", CATCHING_AGENT)
    result = minimize(bundle, "catching_agent")
    assert sources(tmp_path / "min.sftrace") == []
    assert (result.signature.kind, result.signature.detail) == ("exception", "ValueError")
    assert result.minimal
    assert (result.replays_cleanly, result.removed_calls_made) == (False, 6)
    assert dict(result.rows())["Clean Replay"] == (
        "No (6 removed calls are still made; `stepfork replay` reports DIVERGED)"
    )
    outcome = replay_entrypoint(tmp_path / "min.sftrace", "catching_agent:run_agent", import_root=tmp_path)
    assert (outcome.matching.status, outcome.exit_code) == ("DIVERGED", 1)


def test_with_clean_replay_every_call_the_agent_makes_is_kept_in_one_replay_per_call_plus_two(
    tmp_path: Path,
) -> None:
    # Each candidate without a fetch raised the same ValueError but diverged, so none reproduces:
    # detection, one replay per call (the 1-minimality proof, the reached calls being all of them), the
    # final check. The bundle replays as the original: REPRODUCED FAILURE, exit 0.
    bundle = record(tmp_path, "clean_catching_agent", CATCHING_AGENT)
    result = minimize(bundle, "clean_catching_agent", clean_replay=True)
    assert sources(tmp_path / "min.sftrace") == list(range(6))
    assert (result.signature.kind, result.signature.detail, result.signature.divergence) == (
        "exception",
        "ValueError",
        None,
    )
    assert (result.minimal, result.replay_attempts) == (True, 6 + 2)
    assert (result.replays_cleanly, dict(result.rows())["Clean Replay"]) == (True, "Yes")
    outcome = replay_entrypoint(
        tmp_path / "min.sftrace", "clean_catching_agent:run_agent", import_root=tmp_path
    )
    assert (outcome.matching.status, outcome.behavior.status, outcome.exit_code) == (
        "COMPLETE",
        "REPRODUCED FAILURE",
        0,
    )


def test_by_default_a_call_the_failure_depends_on_stays_and_the_search_is_the_binary_one(
    tmp_path: Path,
) -> None:
    # Eight fetches, the failure needs fetch 5 (the agent raises only when it saw source 5). The default
    # search is dd_prefix over all calls: detection, binary search, 1-minimality proof, final check.
    bundle = record(
        tmp_path,
        "needing_agent",
        """
        def run_agent():
            seen = []
            for source in range(8):
                try:
                    seen.append(fetch(source)["source"])
                except Exception:
                    pass
            if 5 in seen:
                raise ValueError("saw 5")
            return seen
        """,
    )
    result = minimize(bundle, "needing_agent", workers=1)
    assert sources(tmp_path / "min.sftrace") == [5]
    assert result.minimal
    assert result.removed_calls_made == 7
    # detection; prefixes of 4, 6 and 5 calls; fetch 5 alone; the empty set (1-minimality); the final
    # check: 7 replays for 8 calls (removing the reached calls one at a time takes a replay per call)
    assert result.replay_attempts == 7


def test_with_clean_replay_an_original_that_diverges_is_minimized_to_the_same_divergence(
    tmp_path: Path,
) -> None:
    # Under replay the agent asks for source 100 where 0 was recorded and catches the divergence, then
    # fails. Removing fetch 0 moves the divergence to another recorded call: not the same failure.
    bundle = record(
        tmp_path,
        "drift_agent",
        """
        def run_agent():
            for source in range(4):
                try:
                    fetch(100 if source == 0 and not RECORDING else source)
                except Exception:
                    pass
            raise ValueError("boom")
        """,
    )
    result = minimize(bundle, "drift_agent", clean_replay=True)
    assert (result.signature.detail, result.signature.divergence) == ("ValueError", "input_diverged")
    assert result.replays_cleanly
    assert sources(tmp_path / "min.sftrace") == [0]
    before, after = (
        replay_entrypoint(path, "drift_agent:run_agent", import_root=tmp_path)
        for path in (bundle, tmp_path / "min.sftrace")
    )
    assert after.matching.status == before.matching.status == "DIVERGED"
    assert after.matching.code == before.matching.code == "input_diverged"
    assert after.matching.diagnostic is not None
    assert before.matching.diagnostic is not None
    assert after.matching.diagnostic.expected_input == before.matching.diagnostic.expected_input


def test_with_clean_replay_when_the_reached_calls_alone_do_not_reproduce_every_call_is_searched(
    tmp_path: Path,
) -> None:
    # Recorded with five calls; the first replay makes three, every later one four (an intermittent
    # agent). The three calls the detection reached do not reproduce (the fourth call finds no recording
    # and diverges), so the full search runs and finds the four calls later replays need.
    bundle = record(
        tmp_path,
        "growing_agent",
        """
        def run_agent():
            calls = 5 if RECORDING else (3 if attempt_number() == 1 else 4)
            for source in range(calls):
                try:
                    fetch(source)
                except Exception:
                    pass
            raise ValueError("boom")
        """,
    )
    result = minimize(bundle, "growing_agent", clean_replay=True)
    assert sources(tmp_path / "min.sftrace") == [0, 1, 2, 3]
    assert result.minimal


def test_with_clean_replay_a_final_replay_that_diverges_is_not_saved(tmp_path: Path) -> None:
    # From the fifth attempt on (detection, three 1-minimality replays, then the final check) the agent
    # drifts and catches the divergence before failing the same way: the final check must refuse it.
    bundle = record(
        tmp_path,
        "late_drift_agent",
        """
        def run_agent():
            drift = not RECORDING and attempt_number() >= 5
            for source in range(3):
                try:
                    fetch(100 if drift and source == 0 else source)
                except Exception:
                    pass
            raise ValueError("boom")
        """,
    )
    with pytest.raises(MinimizeError) as info:
        minimize(bundle, "late_drift_agent", clean_replay=True)
    assert (info.value.code, info.value.exit_code) == ("not_reproduced", 1)
    assert str(info.value).startswith("Minimized trace does not reproduce the original failure")
    assert "diverged (input_diverged)" in str(info.value)
    assert not (tmp_path / "min.sftrace").exists()
