"""``stepfork replay``: the report, each outcome and exit code, and each spec error message.

Spec: cli-reference.txt "replay" and replay.txt "CLI". The golden successful, failed-tool and failed-LLM
runs of the reference replay through small entrypoints (tests/e2e/entrypoints/golden_agents.py).

The real ``stepfork`` gives each exit code (0, 1, 2, 130), the first cell of each matrix, stdin, Ctrl-C, an
agent's sys.exit and the quickstart; the other reports (the same command and wiring, another bundle,
entrypoint or option) run through the console script's ``main`` in-process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import ENTRYPOINTS, InProcess, Result, run_cli


def replay(
    bundle: Path,
    entrypoint: str,
    *extra: str,
    stdin: str | None = None,
    run: Callable[..., Result] | None = None,
) -> Result:
    if run is not None:  # in-process: no stdin to give
        return run("replay", bundle, "--entrypoint", entrypoint, *extra, cwd=ENTRYPOINTS)
    return run_cli("replay", bundle, "--entrypoint", entrypoint, *extra, cwd=ENTRYPOINTS, stdin=stdin)


def _field(out: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}:? +(.*)$", out, re.MULTILINE)
    assert match is not None, f"no {label!r} line in:\n{out}"
    return match.group(1).strip()


def test_the_golden_successful_run_replays_matched_exit_0(golden_copy) -> None:
    bundle = golden_copy("successful_run")
    result = replay(bundle, "golden_agents:weather_agent")
    assert result.code == 0, result.text
    out = result.out
    assert out.startswith("Stepfork Replay")
    assert _field(out, "Trace") == str(bundle)
    assert _field(out, "Agent") == "weather-agent" or _field(out, "Agent")
    assert _field(out, "Entrypoint") == "golden_agents:weather_agent"
    assert _field(out, "Mode") == "frozen"
    assert "  1. llm gpt-test (substituted)" in out
    assert "  2. tool weather_lookup (substituted)" in out
    assert _field(out, "Dependency matching") == "COMPLETE"
    assert _field(out, "Execution") == "COMPLETED"
    assert _field(out, "Recorded behavior") == "MATCHED"
    assert _field(out, "Status") == "COMPLETED"
    assert _field(out, "Final result") == '{"answer":"Clear and 22C"}'


def test_an_async_entrypoint_replays_like_a_sync_one(golden_copy, in_process: InProcess) -> None:
    result = replay(golden_copy("successful_run"), "golden_agents:async_weather_agent", run=in_process)
    assert result.code == 0, result.text
    assert _field(result.out, "Recorded behavior") == "MATCHED"


# each matrix: the first cell through the real executable, the others in-process
@pytest.mark.parametrize(
    ("bundle", "entrypoint", "label"),
    [
        ("failed_tool_run", "golden_agents:flight_agent", "tool flight_search"),
        ("failed_llm_run", "golden_agents:draft_agent", "llm gpt-test"),
    ],
)
def test_recorded_failures_are_reproduced_exit_0(
    golden_copy, bundle: str, entrypoint: str, label: str, in_process: InProcess
) -> None:
    result = replay(
        golden_copy(bundle), entrypoint, run=run_cli if bundle == "failed_tool_run" else in_process
    )
    assert result.code == 0, result.text
    assert f"1. {label} (substituted, recorded error)" in result.out
    assert _field(result.out, "Recorded behavior") == "REPRODUCED FAILURE"
    assert _field(result.out, "Status") == "REPRODUCED FAILURE"
    assert _field(result.out, "Execution").startswith("RAISED")


def test_a_changed_output_is_diverged_exit_1(golden_copy) -> None:
    result = replay(golden_copy("successful_run"), "golden_agents:weather_agent_changed")
    assert result.code == 1, result.text
    assert _field(result.out, "Dependency matching") == "COMPLETE"
    assert _field(result.out, "Recorded behavior") == "DIVERGED"
    assert "answer" in result.out
    assert _field(result.out, "Status") == "DIVERGED"


def test_a_diverging_call_shows_the_first_divergence_with_abbreviated_fingerprints(
    golden_copy, in_process: InProcess
) -> None:
    result = replay(golden_copy("successful_run"), "golden_agents:weather_agent_other_city", run=in_process)
    assert result.code == 1, result.text
    assert _field(result.out, "Dependency matching") == "DIVERGED"
    # spec cli-reference.txt "replay", Common errors: calls numbered from 1, as the "Dependency Calls" list
    assert "  call #1: input diverged from the recording at $.messages[0].content" in result.out
    assert "    differing paths (1):" in result.out
    assert "      $.messages[0].content (first): expected " in result.out
    assert not re.search(r"\b[0-9a-f]{64}\b", result.out)
    assert re.search(r"\b[0-9a-f]{12}…", result.out)


def test_verbose_shows_full_fingerprints(golden_copy, in_process: InProcess) -> None:
    result = replay(
        golden_copy("successful_run"), "golden_agents:weather_agent_other_city", "--verbose", run=in_process
    )
    assert result.code == 1
    assert re.search(r"\b[0-9a-f]{64}\b", result.out)


def test_an_entrypoint_that_stops_early_leaves_calls_unconsumed_exit_1(
    golden_copy, in_process: InProcess
) -> None:
    result = replay(golden_copy("successful_run"), "golden_agents:weather_agent_stops_early", run=in_process)
    assert result.code == 1, result.text
    assert _field(result.out, "Dependency matching") == "INCOMPLETE"
    assert "  replay ended before consuming 1 recorded dependency call(s)" in result.out
    assert "weather_lookup" in result.out


def test_forbidden_mode_rejects_the_first_call(golden_copy, in_process: InProcess) -> None:
    result = replay(
        golden_copy("successful_run"), "golden_agents:weather_agent", "--mode", "forbidden", run=in_process
    )
    assert result.code == 1, result.text
    assert _field(result.out, "Dependency matching") == "DIVERGED"


def test_manual_mode_refuses_when_stdin_is_not_a_terminal(golden_copy) -> None:
    result = replay(
        golden_copy("successful_run"), "golden_agents:weather_agent", "--mode", "manual", stdin="y\n"
    )
    assert result.code == 2
    assert "not a terminal" in result.err
    assert result.out == ""


@pytest.mark.parametrize("mode", ["hybrid", "derived", "turbo"])
def test_an_invalid_mode_is_exit_2_with_the_spec_message(
    golden_copy, mode: str, in_process: InProcess
) -> None:
    result = replay(
        golden_copy("successful_run"),
        "golden_agents:weather_agent",
        "--mode",
        mode,
        run=run_cli if mode == "hybrid" else in_process,
    )
    assert result.code == 2
    assert result.err.splitlines()[0] == f"Invalid replay mode {mode}."


@pytest.mark.parametrize(
    ("entrypoint", "detail"),
    [
        ("golden_agents", "invalid entrypoint 'golden_agents'; expected the form MODULE:FUNCTION"),
        ("no_such_module_xyz:run", "cannot import module 'no_such_module_xyz'"),
        ("golden_agents:nothing_here", "module 'golden_agents' has no attribute 'nothing_here'"),
        ("golden_agents:NOT_CALLABLE", "entrypoint 'golden_agents:NOT_CALLABLE' is not callable"),
    ],
)
def test_unresolvable_entrypoints_print_the_spec_lines_exit_2(
    golden_copy, entrypoint: str, detail: str, in_process: InProcess
) -> None:
    run = run_cli if entrypoint == "golden_agents" else in_process
    result = replay(golden_copy("successful_run"), entrypoint, run=run)
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert lines[0] == "Unable to resolve entrypoint."
    assert lines[1].startswith(detail)
    assert "Traceback" not in result.text


@pytest.mark.parametrize("status", ["", "3"])
def test_an_entrypoint_module_that_exits_on_import_is_unresolvable_exit_2(
    golden_copy, tmp_path: Path, status: str
) -> None:
    # a script without a __main__ guard: before, replay ended with the script's own status (0 for a plain
    # sys.exit(), a "pass" in CI) and printed nothing
    (tmp_path / "script_agent.py").write_text(f"import sys\n\nsys.exit({status})\n\ndef run():\n    pass\n")
    bundle = golden_copy("successful_run")
    result = run_cli("replay", bundle, "--entrypoint", "script_agent:run", cwd=tmp_path)
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert lines[0] == "Unable to resolve entrypoint."
    code = status or "None"
    where = tmp_path.resolve()
    assert lines[1].startswith(f"cannot import module 'script_agent' from {where}: importing it exited")
    assert f"(SystemExit({code}))" in lines[1]
    assert "if __name__ == '__main__':" in lines[1]
    assert "Traceback" not in result.text


def test_an_unreadable_trace_is_exit_2(tmp_path: Path) -> None:
    result = replay(tmp_path / "missing.sftrace", "golden_agents:weather_agent")
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1


def test_live_mode_with_an_unknown_tool_is_rejected_exit_2(golden_copy, in_process: InProcess) -> None:
    result = replay(
        golden_copy("successful_run"),
        "golden_agents:weather_agent",
        "--mode",
        "live",
        "--allow-live-tool",
        "nope",
        run=in_process,
    )
    assert result.code == 2
    assert "nope" in result.err


def test_the_quickstart_bug_reproduces_and_the_fix_diverges(quickstart: Path) -> None:
    buggy = run_cli("replay", "notify.sftrace", "--entrypoint", "quickstart:run_agent", cwd=quickstart)
    assert buggy.code == 0, buggy.text
    assert _field(buggy.out, "Recorded behavior") == "MATCHED"
    assert _field(buggy.out, "Final result") == '{"order_id":"ORD-1001","should_notify":false}'
    fixed = run_cli("replay", "notify.sftrace", "--entrypoint", "quickstart:run_agent_fixed", cwd=quickstart)
    assert fixed.code == 1, fixed.text
    assert _field(fixed.out, "Recorded behavior") == "DIVERGED"


def test_a_completed_run_shows_its_final_result_when_the_calls_diverged(
    golden_copy, in_process: InProcess
) -> None:
    result = replay(
        golden_copy("successful_run"), "golden_agents:weather_agent_other_city_recovers", run=in_process
    )
    assert result.code == 1, result.text
    assert _field(result.out, "Dependency matching") == "DIVERGED"
    assert _field(result.out, "Execution") == "COMPLETED"
    assert _field(result.out, "Recorded behavior") == "NOT COMPARED"
    # the value the entrypoint returned, redacted as every value printed from a run, never `null`
    assert _field(result.out, "Final result") == '{"answer":"fallback","key":"[REDACTED]"}'
    assert "sk-live-0123456789abcdef" not in result.text


def test_a_call_past_the_end_of_the_recording_is_described_in_words(
    golden_copy, in_process: InProcess
) -> None:
    result = replay(golden_copy("successful_run"), "golden_agents:weather_agent_asks_again", run=in_process)
    assert result.code == 1, result.text
    assert _field(result.out, "Dependency matching") == "DIVERGED"
    assert "    recorded: no further call (the recording ended)" in result.out
    assert '    live:     tool weather_lookup  input {"city":"Pokhara"}' in result.out
    assert "    hint: the agent makes more calls than the recording has (an extra call)" in result.out
    assert "None" not in result.out


def test_an_entrypoint_calling_sys_exit_is_reported_not_obeyed(golden_copy) -> None:
    result = replay(golden_copy("successful_run"), "golden_agents:weather_agent_exits")
    assert result.code == 1, result.text  # not the agent's 3: the report judges the run
    assert _field(result.out, "Execution") == "RAISED SystemExit: 3"
    assert _field(result.out, "Recorded behavior") == "DIVERGED"
    assert "Traceback" not in result.text


@pytest.mark.skipif(os.name != "posix", reason="sends itself SIGINT")
def test_ctrl_c_prints_interrupted_and_exits_130(golden_copy) -> None:
    result = replay(golden_copy("successful_run"), "golden_agents:weather_agent_interrupted")
    assert result.code == 130, result.text
    assert result.err == "Interrupted.\n"
    assert result.out == ""
