"""The smolagents example (examples/smolagents_agent), end to end through the real CLI (issue 30).

A ``ToolCallingAgent`` and a ``CodeAgent`` with two ``@tool`` tools, no Stepfork line (one
answers a fresh report id: a replay must serve it), on ``OpenAIServerModel`` at a local OpenAI-compatible
server on 127.0.0.1 (helpers/local_openai.py). The ``ToolCallingAgent`` asks for both tools at once;
smolagents runs them in a thread pool (``copy_context``) and orders their observations by tool-call id,
which the replay serves as recorded, so the next request matches. The ``CodeAgent``'s model writes Python
that calls the tools; a replay serves that code from the recording and smolagents' local interpreter runs
it again, its tool calls served from the recording. Slow: ``hatch run slow:test -- tests/integrations/
test_smolagents.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import serving
from program_runs import Program, matched_in_process, replays_pass, story

from stepfork.trace import load_trace

pytestmark = pytest.mark.slow

SCRIPT = "weather_smolagents.py"

CHANGES = {  # an edit of the example and where its replay diverges (the Chat Completions request)
    "prompt": (
        'agent.run(f"What is the weather in {city}?")',
        'agent.run(f"How is the weather in {city}?")',
        "$.body.messages[1].content[0].text",
    ),
    "tool description": (
        "Get the current weather in a city.",
        "Get the weather in a city, in Celsius.",
        "$.body.tools[0].function.description",
    ),
    "tool argument": (
        "def get_air_quality(city: str) -> str:\n"
        '    """\n    Get the air quality index of a city.\n\n    Args:\n        city: the city\'s name.\n',
        "def get_air_quality(city: str, units: str) -> str:\n"
        '    """\n    Get the air quality index of a city.\n\n    Args:\n        city: the city\'s name.\n'
        "        units: the index's units.\n",
        "$.body.tools[1].function.parameters.properties",
    ),
}


@pytest.fixture
def program(tmp_path: Path) -> Iterator[Program]:
    with serving() as server:
        yield Program.copy("smolagents_agent", tmp_path / "agent", server)


def test_tool_calling_agent_records_replays_diverges_diffs_and_its_test_passes(program: Program) -> None:
    figures = story(
        program,
        [SCRIPT, "tools", "Paris"],
        CHANGES,
        script=SCRIPT,
        llm_calls=2,  # both tools at once, then final_answer
        tools=["get_air_quality", "get_weather"],
    )
    print(f"ToolCallingAgent: {figures}")


def test_code_agent_replays_the_recorded_code_with_its_tools_served(program: Program) -> None:
    passed = replays_pass(program, [SCRIPT, "code", "Paris"], llm_calls=2)
    events = load_trace(program.folder / "run.sftrace").events
    assert sorted(e.name for e in events if str(e.type) == "tool_call") == ["get_air_quality", "get_weather"]
    print(f"CodeAgent: {passed} replays passed")


@pytest.mark.parametrize("kind", ["tools", "code"])
def test_recorded_in_process_the_replay_is_matched(program: Program, kind: str) -> None:
    matched = matched_in_process(program, "weather_smolagents:main", kind, "Paris")
    print(f"{kind}, in-process: {matched} MATCHED")
