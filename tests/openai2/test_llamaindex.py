"""The LlamaIndex example (examples/llamaindex_agent), end to end through the real CLI (issue 30).

A ``FunctionAgent`` with two tools (plain functions, no Stepfork line; one answers a fresh report id, a
value a replay must serve) on ``llama_index.llms.openai.OpenAI``, and a two-step ``Workflow`` whose steps
call ``llm.acomplete``, against a local OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py).
The agent streams the model's answers (Chat Completions SSE with tool-call deltas); LlamaIndex asks for no
usage in a stream, so the example passes ``additional_kwargs={"stream_options": {"include_usage": True}}``
(LlamaIndex drops it from the requests that do not stream) and ``inspect`` shows the token counts.
In its own environment (openai 2.x): ``hatch run openai2:test``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import serving
from program_runs import Program, matched_in_process, prompt_and_tool_changes, replays_pass, story

SCRIPT = "weather_llamaindex.py"

CHANGES = prompt_and_tool_changes(  # edits of the example and where its replay diverges (Chat Completions)
    ('agent.run(f"What is the weather in {city}?")', 'agent.run(f"How is the weather in {city}?")'),
    "$.body.messages[1].content",
)


@pytest.fixture
def program(tmp_path: Path) -> Iterator[Program]:
    with serving() as server:
        yield Program.copy("llamaindex_agent", tmp_path / "agent", server)


def test_function_agent_records_replays_diverges_diffs_and_its_test_passes(program: Program) -> None:
    figures = story(
        program,
        [SCRIPT, "agent", "Paris"],
        CHANGES,
        script=SCRIPT,
        llm_calls=2,  # both tools at once, then the answer
        tools=["get_air_quality", "get_weather"],
    )
    print(f"FunctionAgent: {figures}")


def test_the_workflow_replays_with_its_tokens(program: Program) -> None:
    print(f"workflow: {replays_pass(program, [SCRIPT, 'workflow', 'Lyon'], llm_calls=2)} replays passed")


@pytest.mark.parametrize("how", ["agent", "workflow"])
def test_recorded_in_process_the_replay_is_matched(program: Program, how: str) -> None:
    matched = matched_in_process(program, "weather_llamaindex:main", how, "Paris")
    print(f"{how}, in-process: {matched} MATCHED")
