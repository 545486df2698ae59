"""Framework tools written as the frameworks' docs write them are instrumented boundaries (issue 30).

A newcomer's report (finding 5): the OpenAI Agents SDK quickstart's ``@function_tool``, a LangGraph
``create_react_agent(ChatOpenAI(...), tools=[get_weather])`` and a smolagents ``ToolCallingAgent``, with no
``@trace_tool`` (the frameworks' docs have none), ran their tools live in frozen replay while the verdict said
COMPLETED/MATCHED and "Network sealed"; smolagents' observations, ordered by random tool-call ids, made 2 of 5
diffs of unchanged code CHANGED. Here each agent (no Stepfork line; the LangGraph one recorded in-process with
``autocapture.enable()`` and ``record(...)``, as docs/integrations.md shows) has a tool with a visible side
effect (a line in a file, a sqlite row) and runs against the local OpenAI-compatible server on 127.0.0.1
(helpers/local_openai.py): the tools are recorded as tool calls named as the model sees them, a frozen
replay (through the real CLI, and in-process) is MATCHED with the side effect absent and the server's counter
unchanged, and a hybrid replay in which the live model now asks the tool about another city diverges at the
tool, at ``$.city``. A tool also under ``@trace_tool`` is recorded once. Bundles recorded before this change
(data/framework_tools_0_2, by Stepfork 0.2.0: no tool calls) are refused with the re-record hint, the tool
never run. Slow (the SDKs' imports): ``hatch run slow:test -- tests/integrations/test_framework_tools.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import LocalOpenAI, serving
from program_runs import divergence_paths, passed
from tool_agents import (
    agent_folder,
    assert_matched,
    assert_tool_diverged,
    forget_side_effects,
    frozen_in_process,
    hybrid,
    served_not_run,
    side_effects,
    sqlite_rows,
    tool_calls,
)

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parent / "data" / "framework_tools_0_2"

AGENTS_SDK = '''"""The OpenAI Agents SDK quickstart with a function tool, as the SDK's docs write it."""
import sys

from agents import Agent, Runner, function_tool


@function_tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    with open("side_effects.log", "a") as f:
        f.write(f"get_weather({city}) ran\\n")
    return f"The weather in {city} is sunny."


agent = Agent(name="Weather agent", instructions="You are a helpful agent.", tools=[get_weather],
              model="gpt-4o-mini")


def main(city="Paris"):
    return Runner.run_sync(agent, f"What is the weather in {city}?").final_output


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
'''

LANGGRAPH = '''"""LangGraph's create_react_agent on ChatOpenAI, as LangGraph's quickstart writes it; the
tool writes a sqlite row."""
import sqlite3
import sys
import warnings

from langchain_openai import ChatOpenAI

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


def get_weather(city: str) -> str:
    """Get weather for a given city."""
    db = sqlite3.connect("side.db")
    db.execute("create table if not exists calls (city text)")
    db.execute("insert into calls values (?)", (city,))
    db.commit()
    db.close()
    return f"It's always sunny in {city}!"


def main(city="Paris"):
    agent = create_react_agent(model=ChatOpenAI(model="gpt-4o-mini"), tools=[get_weather],
                               prompt="You are a helpful assistant")
    result = agent.invoke({"messages": [{"role": "user", "content": f"What is the weather in {city}?"}]})
    return result["messages"][-1].content


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
'''

SMOLAGENTS = '''"""smolagents' ToolCallingAgent on OpenAIServerModel, as smolagents' docs write it."""
import os
import sys

from smolagents import OpenAIServerModel, ToolCallingAgent, tool


@tool
def get_weather(city: str) -> str:
    """
    Get the weather in a city.

    Args:
        city: the city's name.
    """
    with open("side_effects.log", "a") as f:
        f.write(f"get_weather({city}) ran\\n")
    return f"Sunny in {city}"


@tool
def get_air_quality(city: str) -> str:
    """
    Get the air quality index of a city.

    Args:
        city: the city's name.
    """
    return f"The air quality index in {city} is 42 (good)."


model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"],
                          api_key=os.environ["OPENAI_API_KEY"])


def main(city="Paris"):
    agent = ToolCallingAgent(tools=[get_weather, get_air_quality], model=model, max_steps=2,
                             verbosity_level=0)
    return str(agent.run(f"What is the weather in {city}?"))


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
'''

PYDANTIC_AI = '''"""A pydantic-ai agent as pydantic-ai's docs write it: a model name, `@agent.tool` taking the
RunContext, `@agent.tool_plain`."""
import sys

from pydantic_ai import Agent, RunContext

agent = Agent("openai:gpt-4o-mini", deps_type=str, instructions="Be concise, reply with one sentence.")


@agent.tool
async def get_weather(ctx: RunContext[str], city: str) -> str:
    """Get the weather for a city."""
    with open("side_effects.log", "a") as f:
        f.write(f"get_weather({city}) ran\\n")
    return f"The weather in {city} is sunny, 21 degrees {ctx.deps}."


@agent.tool_plain
def get_air_quality(city: str) -> str:
    """Get the air quality index of a city."""
    with open("side_effects.log", "a") as f:
        f.write(f"get_air_quality({city}) ran\\n")
    return f"The air quality index in {city} is 42 (good)."


def main(city="Paris"):
    return agent.run_sync(f"What is the weather in {city}?", deps="Celsius").output


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
'''


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def test_agents_sdk_function_tool_is_recorded_served_and_diverges_at_its_argument(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    # recorded input: the JSON arguments the model wrote
    served_not_run(agent_folder(tmp_path, server, {"agent.py": AGENTS_SDK}), "agent")


def test_langgraph_react_agent_tool_is_recorded_served_and_diverges_at_its_argument(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    program = agent_folder(tmp_path, server, {"lg_agent.py": LANGGRAPH})
    program.in_process("record", "run.sftrace", "lg_agent:main", "Paris")
    assert sqlite_rows(program) == 1
    assert tool_calls(program, "run.sftrace") == [("get_weather", {"city": "Paris"})]

    forget_side_effects(program)
    assert_matched(frozen_in_process(program, "run.sftrace", "lg_agent:main", "Paris"))
    assert sqlite_rows(program) == 0  # ToolNode got the recorded result: no row written
    assert_tool_diverged(hybrid(program, "run.sftrace", "lg_agent:main", "Lyon"), "get_weather", "$.city")
    assert sqlite_rows(program) == 0

    program.record("cli.sftrace", "lg_agent.py", "Paris")  # and under `stepfork record --`
    forget_side_effects(program)
    report = program.replay("cli.sftrace", "lg_agent.py", "Paris")
    assert passed(report), (report["matching"], report["stderr"][-3000:])
    assert sqlite_rows(program) == 0


def test_pydantic_ai_tools_are_recorded_served_and_diverge_at_their_argument(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    program = agent_folder(tmp_path, server, {"pai_agent.py": PYDANTIC_AI})
    program.record("run.sftrace", "pai_agent.py", "Paris")  # `stepfork record --`: no Stepfork line
    assert sorted(side_effects(program)) == ["get_air_quality(Paris) ran", "get_weather(Paris) ran"]
    assert sorted(tool_calls(program, "run.sftrace")) == [
        ("get_air_quality", {"city": "Paris"}),
        ("get_weather", {"city": "Paris", "$excluded": ["ctx"]}),  # the RunContext is not an input
    ]

    forget_side_effects(program)
    sent = len(server.requests)
    report = program.replay("run.sftrace", "pai_agent.py", "Paris")  # `stepfork replay`, frozen
    assert passed(report), (report["matching"], report["stderr"][-3000:])
    assert side_effects(program) == []  # neither tool's function ran
    assert len(server.requests) == sent

    program.in_process("record", "inproc.sftrace", "pai_agent:main", "Paris")
    forget_side_effects(program)
    assert_matched(frozen_in_process(program, "inproc.sftrace", "pai_agent:main", "Paris"))
    assert side_effects(program) == []
    # the live model now asks about Lyon: DIVERGED at a tool's `city`, no tool answering with Paris's result
    report = hybrid(program, "inproc.sftrace", "pai_agent:main", "Lyon")
    assert report["exit_code"] == 1, report["matching"]
    diagnostic = report["matching"]["diagnostic"] or {}
    assert diagnostic.get("expected_kind") == "tool", diagnostic
    assert diagnostic.get("expected_label") in ("get_weather", "get_air_quality"), diagnostic
    assert "$.city" in divergence_paths(report), report["matching"]
    assert side_effects(program) == []


def test_smolagents_tools_are_recorded_served_and_unchanged_code_diffs_equivalent(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    program = agent_folder(tmp_path, server, {"smol.py": SMOLAGENTS})
    bundles = [f"run{i}.sftrace" for i in range(6)]
    for bundle in bundles:
        program.record(bundle, "smol.py", "Paris")
        assert sorted(tool_calls(program, bundle)) == [
            ("get_air_quality", {"city": "Paris"}),
            ("get_weather", {"city": "Paris"}),
        ]
    # both tools in one model turn, their observations ordered by the (random) tool-call ids: each
    # recording serves its own ids, so two recordings of unchanged code are the same behaviour
    diffs = [program.stepfork("diff", bundles[0], other) for other in bundles[1:]]
    verdicts = [done.stdout.strip().splitlines()[-1] for done in diffs]
    assert verdicts == ["Result: BEHAVIOR EQUIVALENT"] * 5

    forget_side_effects(program)
    sent = len(server.requests)
    report = program.replay(bundles[0], "smol.py", "Paris")
    assert passed(report), (report["matching"], report["stderr"][-3000:])
    assert side_effects(program) == []
    assert len(server.requests) == sent

    program.in_process("record", "inproc.sftrace", "smol:main", "Paris")
    forget_side_effects(program)
    assert_matched(frozen_in_process(program, "inproc.sftrace", "smol:main", "Paris"))
    report = hybrid(program, "inproc.sftrace", "smol:main", "Lyon")
    assert report["exit_code"] == 1, report["matching"]
    assert "$.city" in divergence_paths(report), report["matching"]
    assert side_effects(program) == []


AIR_QUALITY = '''

@function_tool
def get_air_quality(city: str) -> str:
    """Get the air quality index of a city."""
    return f"The air quality index in {city} is 42 (good)."
'''


def stacked(text: str, decorator: str) -> str:
    """``text`` with ``@trace_tool`` under ``decorator`` on ``get_weather`` (docs/integrations.md's earlier
    one line) and, for the Agents SDK's one-tool quickstart, a second tool without it."""
    edited = text.replace(f"{decorator}\ndef get_weather", f"{decorator}\n@trace_tool\ndef get_weather")
    edited = edited.replace("\n\n\n", "\n\nfrom stepfork import trace_tool\n\n\n", 1)
    if "get_air_quality" not in edited:
        edited = edited.replace("\n\nagent = Agent(", AIR_QUALITY + "\n\nagent = Agent(")
        edited = edited.replace("tools=[get_weather]", "tools=[get_weather, get_air_quality]")
    assert edited.count("@trace_tool") == 1
    assert "get_air_quality]" in edited
    return edited


@pytest.mark.parametrize(
    ("script", "text", "decorator"),
    [("agent.py", AGENTS_SDK, "@function_tool"), ("smol.py", SMOLAGENTS, "@tool")],
)
def test_a_tool_also_under_trace_tool_is_recorded_once_and_the_others_by_the_framework(
    tmp_path: Path, server: LocalOpenAI, script: str, text: str, decorator: str
) -> None:
    program = agent_folder(tmp_path, server, {script: stacked(text, decorator)})
    program.record("run.sftrace", script, "Paris")
    # get_weather once (by @trace_tool, the framework leaving it alone), get_air_quality by the framework
    names = sorted(name for name, _ in tool_calls(program, "run.sftrace"))
    assert names == ["get_air_quality", "get_weather"]
    forget_side_effects(program)
    report = program.replay("run.sftrace", script, "Paris")
    assert passed(report), (report["matching"], report["stderr"][-3000:])
    assert side_effects(program) == []


@pytest.mark.parametrize(
    ("bundle", "script", "text", "how"),
    [
        ("agents_sdk.sftrace", "agent.py", AGENTS_SDK, "program"),
        ("lg_agent.sftrace", "lg_agent.py", LANGGRAPH, "in-process"),
    ],
)
def test_a_bundle_recorded_before_framework_tools_were_recorded_is_refused_not_run(
    tmp_path: Path, server: LocalOpenAI, bundle: str, script: str, text: str, how: str
) -> None:
    program = agent_folder(tmp_path, server, {script: text})
    shutil.copytree(DATA / bundle, program.folder / bundle)
    assert tool_calls(program, bundle) == []  # Stepfork 0.2.0 did not record the tool
    if how == "program":
        report = program.replay(bundle, script, "Paris")
    else:
        report = program.in_process("replay", bundle, f"{Path(script).stem}:main", "Paris")
    assert report["exit_code"] == 1, report["matching"]
    hint = (report["matching"]["diagnostic"] or {}).get("hint") or ""
    assert "holds no call of tool 'get_weather'" in hint, report["matching"]
    assert "record the run again" in hint
    assert side_effects(program) == []  # refused, never run
    assert sqlite_rows(program) == 0
