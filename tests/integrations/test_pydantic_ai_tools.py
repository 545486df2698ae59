"""pydantic-ai tools with no Stepfork line are instrumented boundaries (docs/integrations.md, "Agent
frameworks").

The agent is written as pydantic-ai's docs write it: ``Agent(model, deps_type=..., instructions=...)`` on an
``OpenAIChatModel`` whose ``OpenAIProvider`` points at the local OpenAI-compatible server on 127.0.0.1
(helpers/local_openai.py: realistic Chat Completions JSON, fresh ids per response, a tool call for every
tool offered), wrapped with ``instrument_model`` (the pydantic-ai row of docs/integrations.md), its tools
declared the four ways the docs show: ``@agent.tool`` (a ``RunContext`` first parameter, async),
``@agent.tool_plain`` (sync: pydantic-ai runs it on a worker thread), ``Tool(...)`` in ``tools=[...]`` (sync)
and a ``FunctionToolset`` in ``toolsets=`` (async).
No tool is under ``@trace_tool``; each appends to ``RAN``, its side effect.

Under ``record(...)`` each call is one tool call named as pydantic-ai names the tool, its input the
validated arguments (the ``RunContext`` left out, listed under ``"$excluded"``); a frozen ``ReplaySession``
serves every call without running a function or reaching the server; with the model live asking about
another city the tool diverges at ``$.city``, not run; ``ModelRetry`` and ``ToolFailed`` replay as
pydantic-ai's own exceptions; ``@agent.tool`` over ``@trace_tool`` is recorded once, and its bundle replays
MATCHED once the decorator is removed. pydantic-ai's own common tools (``x_search_tool`` here) are recorded
too. A bundle recorded before (data/pydantic_ai_tools_before: no tool call)
is refused where the tool is called, never run. The same agent under the real CLI (``stepfork record --``,
``stepfork replay``): tests/integrations/test_framework_tools.py.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from integration_helpers import events_of
from local_openai import LocalOpenAI, serving
from pydantic_ai import Agent, ModelRetry, RunContext, Tool
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.toolsets import FunctionToolset

from stepfork.integrations.pydantic_ai import instrument_model
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import record, trace_tool

DATA = Path(__file__).resolve().parent / "data" / "pydantic_ai_tools_before"
RAN: list[str] = []


def get_local_time(city: str) -> str:
    """The local time in a city."""
    RAN.append(f"get_local_time({city})")
    return f"12:00 in {city}"


async def get_population(city: str) -> int:
    """The population of a city."""
    RAN.append(f"get_population({city})")
    return 2_100_000


def model(server: LocalOpenAI) -> Any:
    provider = OpenAIProvider(base_url=server.base_url, api_key="sk-local-test-key")
    return instrument_model(OpenAIChatModel("gpt-4o-mini", provider=provider))


def weather_agent(server: LocalOpenAI, *, stacked: bool = False) -> Agent[str, str]:
    """The weather agent; ``stacked``: ``get_weather`` also under ``@trace_tool`` (the earlier one line)."""
    agent = Agent(
        model(server),
        deps_type=str,
        instructions="Answer with the weather.",
        tools=[Tool(get_local_time)],
        toolsets=[FunctionToolset([get_population])],
    )

    async def get_weather(ctx: RunContext[str], city: str) -> str:
        """Current weather of a city."""
        await asyncio.sleep(0)
        RAN.append(f"get_weather({city})")
        return f"{city}: sunny, 21{ctx.deps}"

    agent.tool(trace_tool(get_weather) if stacked else get_weather)

    @agent.tool_plain
    def get_air_quality(city: str) -> str:
        """The air quality index of a city."""
        RAN.append(f"get_air_quality({city})")
        return f"{city}: 42 (good)"

    return agent


def ask(agent: Agent[str, str], city: str = "Paris") -> str:
    return agent.run_sync(f"What is the weather in {city}?", deps="C").output


def tool_calls(bundle: Path) -> list[tuple[str, Any]]:
    return sorted((e["name"], e["input"]) for e in events_of(bundle) if e["type"] == "tool_call")


def llm_label(bundle: Path) -> str:
    request = next(e for e in events_of(bundle) if e["type"] == "llm_request")
    return f"{request['provider']}/{request['model']}"


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


@pytest.fixture(autouse=True)
def _forget() -> None:
    RAN.clear()


def recorded(bundle: Path, run: Callable[[], str]) -> str:
    with record("pydantic-ai-tools", output=bundle):
        return run()


def test_each_tool_is_recorded_with_its_arguments_and_served_without_running(
    bundle: Path, server: LocalOpenAI
) -> None:
    live = recorded(bundle, lambda: ask(weather_agent(server)))
    assert sorted(RAN) == [
        "get_air_quality(Paris)",
        "get_local_time(Paris)",
        "get_population(Paris)",
        "get_weather(Paris)",
    ]
    assert tool_calls(bundle) == [
        ("get_air_quality", {"city": "Paris"}),
        ("get_local_time", {"city": "Paris"}),
        ("get_population", {"city": "Paris"}),
        ("get_weather", {"city": "Paris", "$excluded": ["ctx"]}),  # the RunContext is not an input
    ]
    assert "Paris: sunny, 21C" in live  # the model was sent what the tool returned

    RAN.clear()
    sent = len(server.requests)
    with ReplaySession.from_trace(bundle) as session:
        replayed = ask(weather_agent(server))
    session.verify_complete()
    assert RAN == []  # no tool function ran
    assert len(server.requests) == sent
    assert replayed == live


def test_a_changed_tool_argument_diverges_at_its_path_and_the_tool_does_not_run(
    bundle: Path, server: LocalOpenAI
) -> None:
    recorded(bundle, lambda: ask(weather_agent(server)))
    RAN.clear()
    # the model, live, now asks the tools about Lyon: no tool may answer with Paris's recorded result
    hybrid = ReplaySession.from_trace(bundle, "hybrid", live_llms=[llm_label(bundle)])
    with hybrid as session, pytest.raises(ReplayMismatchError):
        ask(weather_agent(server), "Lyon")
    divergence = session.divergence
    assert divergence is not None
    assert divergence.code == "input_diverged"
    assert divergence.diagnostic is not None
    assert divergence.diagnostic.expected_kind == "tool"
    assert divergence.diagnostic.difference is not None
    assert divergence.diagnostic.difference.path == "$.city"
    assert RAN == []


def test_model_retry_and_tool_failed_replay_as_pydantic_ais_own_exceptions(
    bundle: Path, server: LocalOpenAI
) -> None:
    from pydantic_ai.exceptions import ToolFailed

    def retry_agent() -> Agent[None, str]:
        agent = Agent(model(server), instructions="Book a table.")

        @agent.tool_plain
        async def book_table(city: str) -> str:
            """Book a table in a city."""
            RAN.append(f"book_table({city})")
            raise ModelRetry("no table left tonight, ask for tomorrow")

        @agent.tool_plain
        def find_restaurant(city: str) -> str:
            """A restaurant in a city."""
            RAN.append(f"find_restaurant({city})")
            raise ToolFailed(f"no restaurant in {city}")

        return agent

    def run() -> str:
        return retry_agent().run_sync("A table in Paris?").output

    live = recorded(bundle, run)
    assert sorted(RAN) == ["book_table(Paris)", "find_restaurant(Paris)"]
    kinds = sorted(e["details"]["control_flow"]["kind"] for e in events_of(bundle) if e["type"] == "error")
    assert kinds == ["pydantic_ai.model_retry", "pydantic_ai.tool_failed"]
    assert "no table left tonight" in live  # what the model was told
    assert "no restaurant in Paris" in live

    RAN.clear()
    with ReplaySession.from_trace(bundle) as session:
        replayed = run()
    session.verify_complete()  # the model's next request, the retry prompt in it, matched the recording
    assert RAN == []
    assert replayed == live


def test_a_tool_also_under_trace_tool_is_recorded_once_and_replays_without_it(
    bundle: Path, server: LocalOpenAI
) -> None:
    live = recorded(bundle, lambda: ask(weather_agent(server, stacked=True)))
    names = [name for name, _ in tool_calls(bundle)]
    assert names == ["get_air_quality", "get_local_time", "get_population", "get_weather"]  # once each
    assert ("get_weather", {"city": "Paris", "$excluded": ["ctx"]}) in tool_calls(bundle)

    RAN.clear()  # the decorator removed: the same call, the same input, served
    with ReplaySession.from_trace(bundle) as session:
        replayed = ask(weather_agent(server))
    session.verify_complete()
    assert RAN == []
    assert replayed == live


def test_a_bundle_recorded_before_pydantic_ai_tools_were_recorded_is_refused_not_run(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    bundle = tmp_path / "weather.sftrace"
    shutil.copytree(DATA / "weather.sftrace", bundle)
    assert tool_calls(bundle) == []  # Stepfork before this change did not record the tools
    with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayMismatchError):
        ask(weather_agent(server))
    divergence = session.divergence
    assert divergence is not None
    hint = (divergence.diagnostic.hint if divergence.diagnostic is not None else None) or ""
    assert "holds no call of tool 'get_" in hint, divergence
    assert "record the run again" in hint
    assert RAN == []  # refused, never run


def test_a_pydantic_ai_common_tool_is_recorded_and_served_like_the_users(
    bundle: Path, server: LocalOpenAI
) -> None:
    # pydantic-ai's common tools reach outside the agent (a search engine, a web page, a subagent's model;
    # DuckDuckGo's through a Rust HTTP client the seal does not see): a frozen replay must serve them too.
    # Here the X search tool, its subagent on a FunctionModel that counts its requests
    from pydantic_ai.common_tools.x_search import x_search_tool
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.native_tools import XSearchTool

    def subagent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        RAN.append("x_search subagent")
        return ModelResponse(parts=[TextPart("Parisians post about the sun.")])

    def run() -> str:
        search = x_search_tool(model=FunctionModel(subagent), native_tool=XSearchTool())
        agent = Agent(model(server), instructions="Answer with what people say.", tools=[search])
        return agent.run_sync("What do people say in Paris?").output

    live = recorded(bundle, run)
    assert RAN == ["x_search subagent"]
    [(name, arguments)] = tool_calls(bundle)
    assert (name, sorted(arguments)) == ("x_search", ["$excluded", "query"])  # the tool takes the RunContext
    assert "Parisians post about the sun." in live

    RAN.clear()
    with ReplaySession.from_trace(bundle) as session:
        replayed = run()
    session.verify_complete()
    assert RAN == []  # the subagent never ran
    assert replayed == live


async def streamed(agent: Agent[str, str]) -> str:
    """The answer through ``run_stream`` (pydantic-ai's "Streaming" docs): text deltas joined."""
    async with agent.run_stream("What is the weather in Paris?", deps="C") as result:
        return "".join([delta async for delta in result.stream_text(delta=True)])


async def iterated(agent: Agent[str, str]) -> str:
    """The answer through ``agent.iter`` (pydantic-ai's "Iterating over an agent's graph"): node by node."""
    async with agent.iter("What is the weather in Paris?", deps="C") as run:
        nodes = [type(node).__name__ async for node in run]
    assert "CallToolsNode" in nodes
    assert run.result is not None
    return run.result.output


@pytest.mark.parametrize("how", [streamed, iterated], ids=["run_stream", "iter"])
def test_tools_under_run_stream_and_iter_are_recorded_and_served_without_running(
    bundle: Path, server: LocalOpenAI, how: Callable[[Agent[str, str]], Any]
) -> None:
    live = recorded(bundle, lambda: asyncio.run(how(weather_agent(server))))
    assert len(tool_calls(bundle)) == 4
    assert len(RAN) == 4
    RAN.clear()
    sent = len(server.requests)
    with ReplaySession.from_trace(bundle) as session:
        replayed = asyncio.run(how(weather_agent(server)))
    session.verify_complete()
    assert RAN == []  # no tool function ran
    assert len(server.requests) == sent
    assert replayed == live
