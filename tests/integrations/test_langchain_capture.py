"""LangChain ``ChatOpenAI``/``ChatAnthropic`` and LangGraph ``create_react_agent`` through the HTTP capture
(issue 11): ``instrument_chat_model`` keeps its one line and the requests are recorded at the SDK's
transport, so the tools of ``bind_tools`` and the ``with_structured_output`` schema are in the recorded
input; replay serves the recorded HTTP responses to a sealed fake provider and LangChain builds its own
messages. The agents are in helpers/langchain_agents.py, written as LangChain's and LangGraph's docs write
them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import langchain_agents
import pytest
from capture_harness import assert_same, divergence, record_run, replay_run
from fake_providers import FakeProvider
from integration_helpers import events_of, responses_of
from langchain_agents import (
    Weather,
    WeatherWithRain,
    anthropic_chat,
    async_agent,
    get_weather,
    get_weather_forecast,
    openai_chat,
    react_agent,
    stream_agent,
    structured_agent,
    tools_agent,
)
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage

from stepfork.integrations.langchain import StepforkChatModel

HELPERS = Path(__file__).resolve().parent / "helpers"
DATA = Path(__file__).resolve().parent / "data"
STEPFORK = Path(sys.executable).parent / "stepfork"
PROVIDERS = [pytest.param(openai_chat, id="ChatOpenAI"), pytest.param(anthropic_chat, id="ChatAnthropic")]
Chat = Callable[[FakeProvider], Any]


def assert_same_messages(live: list[Any], replayed: list[Any]) -> None:
    """Same message types and fields, field by field. Ids are left out: LangChain names a generated
    message after its run (``lc_run--<uuid>``), fresh on every run, live or replayed."""
    assert [type(m) for m in replayed] == [type(m) for m in live]
    assert_same(
        [m.model_dump(exclude={"id"}) for m in live], [m.model_dump(exclude={"id"}) for m in replayed]
    )


def requests_of(bundle: Path) -> list[dict[str, Any]]:
    return [e for e in events_of(bundle) if e["type"] == "llm_request"]


def tool_names(request: dict[str, Any]) -> list[str]:
    tools = request["input"]["body"]["tools"]
    return [t.get("name") or t["function"]["name"] for t in tools]


@pytest.mark.parametrize("chat", PROVIDERS)
def test_bind_tools_is_recorded_with_its_tools_and_replays(bundle: Path, chat: Chat) -> None:
    live = record_run(bundle, tools_agent, chat)
    assert [type(m) for m in live][1:3] == [AIMessage, ToolMessage]
    requests = requests_of(bundle)
    provider = "openai" if chat is openai_chat else "anthropic"
    assert [(r["provider"], tool_names(r)) for r in requests] == [(provider, ["get_weather"])] * 2
    assert requests[0]["input"]["path"].endswith(("/chat/completions", "/messages"))
    first = responses_of(bundle)[0]
    assert first["prompt_tokens"]  # usage from the provider's body
    assert first["completion_tokens"]

    replayed = replay_run(bundle, tools_agent, chat)
    assert_same_messages(live, replayed)
    assert replayed[1].tool_calls == live[1].tool_calls


@pytest.mark.parametrize("chat", PROVIDERS)
def test_a_changed_tool_description_or_prompt_diverges_at_its_path(bundle: Path, chat: Chat) -> None:
    record_run(bundle, tools_agent, chat)
    tool = "$.body.tools[0].function" if chat is openai_chat else "$.body.tools[0]"
    error = divergence(bundle, lambda llm: tools_agent(llm, [get_weather_forecast]), chat)
    assert (error.code, error.path) == ("input_diverged", f"{tool}.description")
    error = divergence(bundle, lambda llm: tools_agent(llm, question="Weather in Nice?"), chat)
    assert (error.code, error.path) == ("input_diverged", "$.body.messages[0].content")


@pytest.mark.parametrize("chat", PROVIDERS)
def test_stream_replays_the_same_chunks(bundle: Path, chat: Chat) -> None:
    live = record_run(bundle, stream_agent, chat)
    assert requests_of(bundle)[0]["input"]["body"]["stream"] is True
    assert responses_of(bundle)[0]["output"]["sse"]["end"] == "finished"
    replayed = replay_run(bundle, stream_agent, chat)
    assert all(type(c) is AIMessageChunk for c in replayed)
    assert_same_messages(live, replayed)
    assert "".join(str(c.content) for c in replayed) == FakeProvider().answer


@pytest.mark.parametrize("chat", PROVIDERS)
def test_with_structured_output_records_the_schema_and_a_changed_schema_diverges(
    bundle: Path, chat: Chat
) -> None:
    live = record_run(bundle, structured_agent, chat)
    assert live == Weather(city="Paris", celsius=21)
    replayed = replay_run(bundle, structured_agent, chat)
    assert_same(live, replayed)

    error = divergence(bundle, lambda llm: structured_agent(llm, WeatherWithRain), chat)
    assert error.code == "input_diverged"
    if chat is openai_chat:  # ChatOpenAI's default: response_format with the JSON schema
        assert error.path.startswith("$.body.response_format.json_schema.schema.properties")
    else:  # ChatAnthropic's default: a forced tool named after the schema
        assert error.path.startswith("$.body.tools[0].input_schema.properties")


def test_async_ainvoke_and_astream_replay(bundle: Path) -> None:
    live = record_run(bundle, async_agent, openai_chat)
    replayed = replay_run(bundle, async_agent, openai_chat)
    assert_same_messages([live[0]], [replayed[0]])
    assert_same_messages(live[1], replayed[1])


@pytest.mark.parametrize("chat", PROVIDERS)
def test_langgraph_create_react_agent_records_and_replays(bundle: Path, chat: Chat) -> None:
    live = record_run(bundle, react_agent, chat)
    assert [m.type for m in live][:2] == ["human", "ai"]
    assert [tool_names(r) for r in requests_of(bundle)] == [["get_weather"]] * 2
    # ToolNode runs the tool calls of one message on a thread pool: the default ordering (auto) reads that
    replayed = replay_run(bundle, react_agent, chat)
    assert_same_messages(live, replayed)

    tool = "$.body.tools[0].function" if chat is openai_chat else "$.body.tools[0]"
    error = divergence(bundle, lambda llm: react_agent(llm, [get_weather_forecast]), chat)
    assert error.path == f"{tool}.description"


def test_an_instrumented_http_chat_model_records_nothing_at_the_wrapper(bundle: Path) -> None:
    record_run(bundle, tools_agent, openai_chat)
    inputs = [r["input"] for r in requests_of(bundle)]
    assert all(set(i) == {"method", "path", "headers", "body"} for i in inputs)
    assert isinstance(openai_chat(FakeProvider()).bind_tools([get_weather]), StepforkChatModel)


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_bundle_recorded_at_the_wrapper_before_the_capture_still_replays(name: str, tmp_path: Path) -> None:
    source = f"langchain-{name}-0.2.0.sftrace"
    shutil.copytree(DATA / source, tmp_path / source)
    chat = openai_chat if name == "openai" else anthropic_chat

    def agent(llm: Any) -> list[Any]:  # the agent that recorded it (data/PROVENANCE.md)
        return [tools_agent(llm), stream_agent(llm)]

    messages, chunks = replay_run(tmp_path / source, agent, chat)
    assert messages[-1].content == FakeProvider().answer
    assert "".join(str(c.content) for c in chunks) == FakeProvider().answer


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_exported_test_of_a_langgraph_agent_passes(tmp_path: Path) -> None:
    if not STEPFORK.exists():
        pytest.skip("the stepfork executable is not installed beside this interpreter")
    for name in ("langchain_agents.py", "fake_providers.py"):
        shutil.copy2(HELPERS / name, tmp_path / name)

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300)
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done

    result = langchain_agents.record_run(str(tmp_path / "run.sftrace"))  # in-process: one start less
    (tmp_path / "expected.json").write_text(json.dumps(result))
    export = ["export", "run.sftrace", "--pytest", "--entrypoint", "langchain_agents:run_agent"]
    run([str(STEPFORK), *export, "--expect-output", "expected.json", "--output", "test_regression.py"])
    assert "PASSED" in run([str(STEPFORK), "run", "test_regression.py"]).stdout
