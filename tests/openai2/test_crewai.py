"""The CrewAI example (examples/crewai_agent), end to end through the real CLI (issue 30).

A one-agent crew whose two tools are ``@tool`` functions, no Stepfork line (one answers a fresh report id), on
``llm="gpt-4o-mini"`` (CrewAI's native OpenAI provider) at a local OpenAI-compatible server on 127.0.0.1
(helpers/local_openai.py). CrewAI sends anonymous telemetry to telemetry.crewai.com:4319 by default; the
machine running the tests reaches no such host, so the recordings are made with
``CREWAI_DISABLE_TELEMETRY=true`` (CrewAI's documented opt-out), and one replay runs with its telemetry on
and flushed: the seal refuses the collector, counts it, and the replay still passes (issue 30).
In its own environment (openai 2.x): ``hatch run openai2:test``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import serving
from program_runs import Program, matched_in_process, passed, prompt_and_tool_changes, story

SCRIPT = "weather_crew.py"

CHANGES = prompt_and_tool_changes(  # edits of the example and where its replay diverges (Chat Completions)
    ('description="What is the weather in {city}?"', 'description="How is the weather in {city}?"'),
    "$.body.messages[1].content",
)

TELEMETRY_ON = '''"""Run the crew with CrewAI's telemetry on, then flush it (its exporter posts the spans)."""
import os
import sys

os.environ.pop("CREWAI_DISABLE_TELEMETRY", None)

from crewai.telemetry import Telemetry

import weather_crew

print(weather_crew.main(*sys.argv[1:2]))
Telemetry().provider.force_flush()
'''


@pytest.fixture
def program(tmp_path: Path) -> Iterator[Program]:
    with serving() as server:
        yield Program.copy("crewai_agent", tmp_path / "agent", server, CREWAI_DISABLE_TELEMETRY="true")


def test_the_crew_records_replays_diverges_diffs_and_its_test_passes(program: Program) -> None:
    figures = story(
        program,
        [SCRIPT, "Paris"],
        CHANGES,
        script=SCRIPT,
        llm_calls=2,  # both tools at once, then the final answer
        tools=["get_air_quality", "get_weather"],
    )
    print(f"Crew.kickoff: {figures}")


def test_a_replay_with_telemetry_on_passes_with_the_collector_refused(program: Program) -> None:
    (program.folder / "telemetry_on.py").write_text(TELEMETRY_ON)
    program.record("run.sftrace", SCRIPT, "Paris")  # recorded with telemetry off: nothing leaves the machine
    report = program.replay("run.sftrace", "telemetry_on.py", "Paris")
    assert passed(report), (report["matching"], report["stderr"][-3000:])
    # the export is answered by the capture (requests/urllib3 are captured since issue 30) or, on a stack the
    # capture does not wrap, refused by the seal: never sent, never a divergence
    exports = [item for item in report["requests"]["items"] if item["action"] in ("acknowledged", "refused")]
    assert exports, report["requests"]
    assert all("telemetry.crewai.com" in item["label"] for item in exports), exports


def test_recorded_in_process_the_replay_is_matched(program: Program) -> None:
    print(f"in-process: {matched_in_process(program, 'weather_crew:main', 'Paris')} MATCHED")
