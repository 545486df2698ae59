"""The OpenAI Agents SDK example (examples/openai_agents_sdk), end to end through the real CLI (issue 30).

A triage agent hands off to a weather agent whose two ``@function_tool`` tools (one async, taking the SDK's
``RunContextWrapper`` and answering with a fresh report id, a value a replay must be served, not recompute;
one sync, run in a worker thread), with no Stepfork line, are recorded as tool calls, on the SDK's default
model (the Responses API) at a local OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py: fresh
ids per response, JSON and SSE, parallel tool calls). ``Runner.run``, ``Runner.run_sync`` and
``Runner.run_streamed`` are recorded with ``stepfork record --``, replayed frozen with the server's counter
unchanged, diverged by a changed prompt, tool description and tool argument at their JSON paths, diffed
EQUIVALENT against a second recording, exported and run PASSED, and recorded in-process and replayed
MATCHED.

The SDK's tracing stays on, as a user of OpenAI has it: the test runs the example under ``traced.py``,
which sends the SDK's trace export to the local server (the SDK's own ``set_trace_processors``; the real
endpoint is api.openai.com, out of reach here) and calls ``flush_traces()`` after the run, as a worker
does: the export is recorded as an ``http`` call, and every replay's export (new span ids and times) is
answered without a divergence. Slow (the SDK's import): ``hatch run slow:test -- tests/integrations/
test_openai_agents_sdk.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import LocalOpenAI, serving
from program_runs import Program, matched_in_process, prompt_and_tool_changes, replays_pass, story

from stepfork.trace import load_trace

pytestmark = pytest.mark.slow

SCRIPT = "weather_agents.py"

TRACED = '''"""Run an example with the Agents SDK's trace export sent to TRACE_URL, flushed after the run."""
import os
import runpy
import sys

from agents import flush_traces, set_trace_processors
from agents.tracing.processors import BackendSpanExporter, BatchTraceProcessor

set_trace_processors([BatchTraceProcessor(BackendSpanExporter(endpoint=os.environ["TRACE_URL"]))])
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
flush_traces()
'''

CHANGES = prompt_and_tool_changes(  # edits of the example and where its replay diverges (Responses API)
    ('question = f"What is the weather in {city}?"', 'question = f"How is the weather in {city}?"'),
    "$.body.input[0].content",
    function="",
)


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


@pytest.fixture
def program(tmp_path: Path, server: LocalOpenAI) -> Program:
    copy = Program.copy("openai_agents_sdk", tmp_path / "agent", server)
    copy.env["TRACE_URL"] = f"{server.base_url}/traces/ingest"
    (copy.folder / "traced.py").write_text(TRACED)
    return copy


def test_runner_run_records_replays_diverges_diffs_and_its_test_passes(program: Program) -> None:
    tools = ["get_air_quality", "get_weather", f"http POST {program.server.base_url}/traces/ingest"]
    figures = story(
        program,
        ["traced.py", SCRIPT, "run", "Paris"],
        CHANGES,
        script=SCRIPT,
        llm_calls=3,  # triage (hands off), the weather agent's tools, its answer
        tools=tools,
        telemetry=1,  # flush_traces(): new span ids and times every run, answered without a divergence
    )
    print(f"Runner.run: {figures}")
    events = load_trace(program.folder / "a.sftrace").events
    assert [e.input for e in events if str(e.type) == "tool_call" and e.name == "get_weather"] == [
        {"city": "Paris"}  # the JSON arguments the model wrote: the SDK's RunContextWrapper is not among them
    ]


@pytest.mark.parametrize("how", ["sync", "stream"])
def test_run_sync_and_run_streamed_replay_with_their_tokens(program: Program, how: str) -> None:
    passed = replays_pass(program, ["traced.py", SCRIPT, how, "Lyon"], llm_calls=3)
    print(f"Runner.{'run_sync' if how == 'sync' else 'run_streamed'}: {passed} replays passed")


def test_recorded_in_process_the_replay_is_matched(program: Program) -> None:
    print(f"in-process: {matched_in_process(program, 'weather_agents:main', 'run', 'Paris')} MATCHED")
