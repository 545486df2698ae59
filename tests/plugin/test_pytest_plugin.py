"""The pytest plugin (entry point pytest11): marker, fixture, --stepfork-record, forbidden mode.

Each test writes a small test file and runs pytest on it in a subprocess, as a user would; outcomes are
read from the JUnit XML report (structured), not from the terminal text.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from stepfork.trace import validate_bundle

AGENT = textwrap.dedent(
    """
    import os
    import pytest
    from stepfork.trace import trace_tool
    from stepfork.replay import ReplayPolicyError

    @trace_tool
    def lookup(key: str) -> str:
        return os.environ["LOOKUP_VALUE"] + ":" + key  # KeyError when the body runs during replay

    def agent():
        return [lookup(f"k{i}") for i in range(int(os.environ.get("CALLS", "2")))]

    @pytest.mark.stepfork("bundles/agent.sftrace")
    def test_replayed(stepfork):
        assert agent() == ["live:k0", "live:k1"][: int(os.environ.get("CALLS", "2"))]

    @pytest.mark.stepfork("bundles/failing.sftrace")
    def test_body_failure_is_reported(stepfork):
        lookup("k0")
        assert os.environ.get("FAIL_BODY") != "1", "body failed on purpose"

    @pytest.mark.stepfork(mode="forbidden")
    def test_forbidden(stepfork):
        with pytest.raises(ReplayPolicyError) as info:
            lookup("k0")
        assert info.value.code == "forbidden_mode"
        assert stepfork.refused == ["lookup"]

    def test_unmarked_runs_live(stepfork):
        assert stepfork is None
        os.environ.setdefault("LOOKUP_VALUE", "plain")
        assert lookup("x").endswith(":x")
    """
)


def run_pytest(tmp_path: Path, *args: str, **env: str) -> dict[str, str]:
    """Run pytest on the generated file; return {test name: passed|failed|error|skipped}."""
    test_file = tmp_path / "test_agent.py"
    if not test_file.exists():
        test_file.write_text(AGENT)
    report = tmp_path / "report.xml"
    full_env = {k: v for k, v in os.environ.items() if k not in ("LOOKUP_VALUE", "CALLS", "FAIL_BODY")}
    full_env.update(env)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(test_file),
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            f"--junitxml={report}",
            "-q",
            "--rootdir",
            str(tmp_path),
            *args,
        ],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "")
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        names = {"failure": "failed", "error": "error", "skipped": "skipped"}
        outcomes[name] = names[kinds[0]] if kinds else "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcomes[name + ".message"] = child.get("message", "") + (child.text or "")
    return outcomes


def test_record_then_replay_serves_recorded_outputs_without_running_bodies(tmp_path: Path) -> None:
    recorded = run_pytest(tmp_path, "--stepfork-record", LOOKUP_VALUE="live")
    assert recorded["test_replayed"] == "passed"
    bundle = tmp_path / "bundles" / "agent.sftrace"
    assert validate_bundle(bundle).valid
    # LOOKUP_VALUE is unset: a body that ran would raise KeyError.
    replayed = run_pytest(tmp_path)
    assert replayed["test_replayed"] == "passed"


def test_missing_bundle_in_replay_mode_is_an_error_not_a_live_run(tmp_path: Path) -> None:
    outcomes = run_pytest(tmp_path, LOOKUP_VALUE="live")
    assert outcomes["test_replayed"] == "error"
    assert "StepforkBundleMissingError" in outcomes["test_replayed.message"]
    assert not (tmp_path / "bundles" / "agent.sftrace").exists()


def test_unconsumed_recorded_calls_fail_a_passing_test(tmp_path: Path) -> None:
    run_pytest(tmp_path, "--stepfork-record", LOOKUP_VALUE="live", CALLS="2")
    outcomes = run_pytest(tmp_path, CALLS="1")
    assert outcomes["test_replayed"] == "failed"
    assert "ReplayExhaustedError" in outcomes["test_replayed.message"]


def test_a_failing_body_keeps_its_own_failure(tmp_path: Path) -> None:
    run_pytest(tmp_path, "--stepfork-record", LOOKUP_VALUE="live")
    outcomes = run_pytest(tmp_path, FAIL_BODY="1")
    assert outcomes["test_body_failure_is_reported"] == "failed"
    assert "body failed on purpose" in outcomes["test_body_failure_is_reported.message"]
    assert "ReplayExhaustedError" not in outcomes["test_body_failure_is_reported.message"]


def test_forbidden_mode_needs_no_bundle_and_refuses_every_call(tmp_path: Path) -> None:
    outcomes = run_pytest(tmp_path, LOOKUP_VALUE="live")
    assert outcomes["test_forbidden"] == "passed"
    assert outcomes["test_unmarked_runs_live"] == "passed"
    recorded = run_pytest(tmp_path, "--stepfork-record", LOOKUP_VALUE="live")
    assert recorded["test_forbidden"] == "passed"  # recording never lifts the forbidden mode


ORDERED_AGENT = textwrap.dedent(
    """
    import asyncio
    import os
    import pytest
    from stepfork.trace import trace_tool

    STARTED = []

    @trace_tool
    async def fetch(item: str) -> str:
        value = os.environ["LOOKUP_VALUE"] + ":" + item  # KeyError when the body runs during replay
        started = asyncio.Event()
        STARTED.append(started)
        if len(STARTED) == 2:  # both calls are in flight: the recording overlaps them
            for event in STARTED:
                event.set()
        await started.wait()
        return value

    def agent(items):
        async def main():
            return list(await asyncio.gather(*(fetch(item) for item in items)))
        return asyncio.run(main())

    @pytest.mark.stepfork("bundles/fan_out.sftrace", ordering="concurrent")
    def test_fan_out(stepfork):
        items = os.environ["ITEMS"].split(",")
        assert sorted(agent(items)) == ["live:a", "live:b"]
    """
)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_marker_passes_the_ordering_to_the_session(tmp_path: Path) -> None:
    (tmp_path / "test_agent.py").write_text(ORDERED_AGENT)
    recorded = run_pytest(tmp_path, "--stepfork-record", LOOKUP_VALUE="live", ITEMS="a,b")
    assert recorded["test_fan_out"] == "passed"
    # a gather arriving in another order replays only under ordering="concurrent"
    assert run_pytest(tmp_path, ITEMS="b,a")["test_fan_out"] == "passed"
    strict = ORDERED_AGENT.replace('ordering="concurrent"', 'ordering="strict"')
    (tmp_path / "test_agent.py").write_text(strict)
    outcomes = run_pytest(tmp_path, ITEMS="b,a")
    assert outcomes["test_fan_out"] == "failed"
    assert "ReplayMismatchError" in outcomes["test_fan_out.message"]


RAISE_AS_AGENT = textwrap.dedent(
    """
    import pytest
    from stepfork.trace import trace_tool

    class RateLimited(Exception):
        def __init__(self, message, retry_after):
            super().__init__(message)
            self.retry_after = retry_after

    @trace_tool
    def quote(symbol: str) -> dict:
        try:
            raise TimeoutError("upstream timed out")
        except TimeoutError as exc:
            raise RateLimited("slow", retry_after=3) from exc

    def agent():
        try:
            return quote("ACME")
        except RateLimited as exc:
            return {"status": "degraded", "why": str(exc)}

    @pytest.mark.stepfork("bundles/with.sftrace", raise_as={"RateLimited": RateLimited})
    def test_with_raise_as(stepfork):
        assert agent() == {"status": "degraded", "why": "slow"}

    @pytest.mark.stepfork("bundles/without.sftrace")
    def test_without_raise_as(stepfork):
        assert agent() == {"status": "degraded", "why": "slow"}
    """
)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_marker_passes_raise_as_so_the_agents_except_path_runs(tmp_path: Path) -> None:
    (tmp_path / "test_agent.py").write_text(RAISE_AS_AGENT)
    recorded = run_pytest(tmp_path, "--stepfork-record")
    assert (recorded["test_with_raise_as"], recorded["test_without_raise_as"]) == ("passed", "passed")
    replayed = run_pytest(tmp_path)
    assert replayed["test_with_raise_as"] == "passed"
    # without the mapping the recorded failure is a RecordedDependencyError the agent does not catch
    assert replayed["test_without_raise_as"] == "failed"
    assert "RecordedDependencyError" in replayed["test_without_raise_as.message"]
