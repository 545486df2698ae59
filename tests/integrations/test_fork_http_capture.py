"""`stepfork fork` of an agent whose LLM calls go through the HTTP capture (NEWCOMER3 finding 4;
docs/fork.md).

The agent is OpenAI's function-calling loop as its guide writes it (the model asks for ``get_weather``, the
tool's result goes back, the model answers), against a real OpenAI-compatible server on 127.0.0.1
(helpers/local_openai.py: fresh ids, ``created``, request ids and dates per response). Before the fix every
fork after the first LLM call failed, ``Error: IndexError: list index out of range``, exit 1: the fork's
handler was neither a replay nor a recording to the capture, which took the path of a handler that always
runs the body, and a frozen call never runs it. Now the call before the fork point is served from the
recording (the server never sees it) and every call from the fork point goes live on the server and is
recorded as any recording records it; the forked run reads BEHAVIOR EQUIVALENT to its parent. Every capture
path: the OpenAI SDK (httpx) sync, async and streamed, ``requests`` (urllib3) and aiohttp.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from local_openai import LocalOpenAI, kept, serving
from openai_turns import WEATHER_TOOLS, weather_program

from stepfork.analysis import diff_traces, fork
from stepfork.integrations.aiohttp import instrument_aiohttp
from stepfork.integrations.openai import instrument_openai
from stepfork.integrations.urllib import instrument_urllib
from stepfork.integrations.urllib3 import instrument_urllib3
from stepfork.trace import load_trace, record, trace_tool, validate_bundle, verify_bundle_integrity

STEPFORK = Path(sys.executable).parent / "stepfork"
TOOLS = WEATHER_TOOLS  # the guide's tool schema, in the program below and in the in-process agents

AGENT = '''
"""The function-calling loop of OpenAI's guide: the model asks for a tool, its result goes back."""
import json
import sys

from openai import OpenAI

from stepfork import record, trace_tool
from stepfork.integrations.openai import instrument_openai

client = instrument_openai(OpenAI())

TOOLS = {tools}


{weather_tool}

def run_agent():
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    while True:
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = completion.choices[0].message
        if not message.tool_calls:
            return {"answer": message.content}
        messages.append(message)
        for call in message.tool_calls:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})


if __name__ == "__main__":
    with record("weather-agent", output=sys.argv[1]) as session:
        session.set_output(run_agent())
'''


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def _steps(bundle: Path) -> dict[str, list[int]]:
    """The steps of each event type of ``bundle``, in order."""
    steps: dict[str, list[int]] = {}
    for event in load_trace(bundle).events:
        steps.setdefault(str(getattr(event.type, "value", event.type)), []).append(event.step)
    return steps


def _last_response(bundle: Path) -> Any:
    """The output of the last ``llm_response`` event of ``bundle``."""
    return [e for e in load_trace(bundle).events if str(e.type) == "llm_response"][-1].output


def _label(bundle: Path) -> str:
    call = next(e for e in load_trace(bundle).events if str(e.type) == "llm_request")
    return f"{call.provider}/{call.model}" if call.provider else str(call.model)


# -- the real CLI ------------------------------------------------------------------------------------------


@pytest.fixture
def program(tmp_path: Path, server: LocalOpenAI) -> tuple[Path, dict[str, str]]:
    """The agent's folder, holding ``run.sftrace`` (the agent recorded as a program), and its environment."""
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "weather.py").write_text(weather_program(AGENT), encoding="utf-8")
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-local-test-key",
        "PYTHONPATH": str(folder),
    }
    done = subprocess.run(
        [sys.executable, "weather.py", "run.sftrace"], cwd=folder, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert server.count("/chat/completions") == 2
    assert (folder / "tool-ran.log").read_text() == "Paris\n"
    return folder, env


def _stepfork(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=folder, env=env, capture_output=True, text=True, check=False, timeout=180
    )


def test_a_fork_at_the_second_model_call_goes_live_on_the_server(
    program: tuple[Path, dict[str, str]], server: LocalOpenAI
) -> None:
    folder, env = program
    step = _steps(folder / "run.sftrace")["llm_request"][1]
    label = _label(folder / "run.sftrace")
    given = ("--step", str(step), "-e", "weather:run_agent", "-o", "fork.sftrace", "--live-llm", label)
    done = _stepfork(folder, env, "fork", "run.sftrace", *given)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Status:       COMPLETED" in done.stdout
    assert "Frozen calls: 2\n" in done.stdout  # the first model call and the tool
    assert "Live calls:   1\n" in done.stdout
    assert "IndexError" not in done.stdout + done.stderr
    assert server.count("/chat/completions") == 3  # the frozen call was never sent, the live one was
    assert (folder / "tool-ran.log").read_text() == "Paris\n"  # the tool was served, not run
    live = _last_response(folder / "fork.sftrace")
    assert live["json"]["id"] != _last_response(folder / "run.sftrace")["json"]["id"]  # the server's answer
    assert validate_bundle(folder / "fork.sftrace").valid
    assert verify_bundle_integrity(folder / "fork.sftrace").status == "verified"
    compared = _stepfork(folder, env, "diff", "run.sftrace", "fork.sftrace")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Result: BEHAVIOR EQUIVALENT" in compared.stdout


@pytest.mark.parametrize("allowed", [True, False], ids=["--allow-live-tool", "no --allow-live-tool"])
def test_a_fork_at_the_tool_runs_it_live_only_when_allowed(
    program: tuple[Path, dict[str, str]], server: LocalOpenAI, allowed: bool
) -> None:
    """Allowed: the tool and the next model call run live, exit 0. Not allowed: the tool is refused before
    its body runs, the forked run fails, exit 1 (docs/fork.md), and nothing more reaches the server."""
    folder, env = program
    step = _steps(folder / "run.sftrace")["tool_call"][0]
    given = ("--step", str(step), "-e", "weather:run_agent", "-o", "fork.sftrace")
    allow = ("--allow-live-tool", "get_weather") if allowed else ()
    done = _stepfork(folder, env, "fork", "run.sftrace", *given, *allow)
    assert done.returncode == (0 if allowed else 1), done.stdout + done.stderr
    assert "Frozen calls: 1\n" in done.stdout  # the first model call, never sent again
    sent_and_ran = (server.count("/chat/completions"), (folder / "tool-ran.log").read_text())
    if allowed:
        assert "Live calls:   2\n" in done.stdout  # the tool and the second model call
        assert sent_and_ran == (3, "Paris\nParis\n")
    else:
        assert "Status:       FAILED" in done.stdout
        assert "ReplayPolicyError: fork: live tool 'get_weather'" in done.stdout
        assert sent_and_ran == (2, "Paris\n")


# -- the Python API, on every capture path -----------------------------------------------------------------

QUESTION = "What is the weather in Paris?"
TOOL_RAN: list[str] = []


@trace_tool
def get_weather(city: str) -> dict[str, Any]:
    TOOL_RAN.append(city)
    return {"city": city, "temperature_c": 21, "conditions": "sunny"}


def _tool_messages(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": json.dumps(get_weather(**json.loads(call["function"]["arguments"]))),
        }
        for call in calls
    ]


def _answered(messages: list[dict[str, Any]], message: dict[str, Any]) -> dict[str, Any] | None:
    """One turn of the guide's loop after the model's ``message`` (JSON): the answer, or None once the
    message and its tools' results are added to ``messages``."""
    if not message.get("tool_calls"):
        return {"answer": message["content"]}
    messages.append(message)
    messages += _tool_messages(message["tool_calls"])
    return None


def _loop(ask: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> dict[str, Any]:
    """The guide's loop over ``ask(messages) -> the assistant message as JSON``."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    while (answer := _answered(messages, ask(messages))) is None:
        pass
    return answer


async def _aloop(ask: Callable[[list[dict[str, Any]]], Any]) -> dict[str, Any]:
    """:func:`_loop` over an async ``ask``."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    while (answer := _answered(messages, await ask(messages))) is None:
        pass
    return answer


def _dumped(message: Any) -> dict[str, Any]:
    return dict(message.model_dump(exclude_none=True))


def sdk_agent(server: LocalOpenAI) -> Callable[[], Any]:
    def run() -> dict[str, Any]:
        client = kept(instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="sk-local")))
        return _loop(
            lambda messages: _dumped(
                client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
                .choices[0]
                .message
            )
        )

    return run


def sdk_stream_agent(server: LocalOpenAI) -> Callable[[], Any]:
    def run() -> dict[str, Any]:
        client = kept(instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="sk-local")))

        def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
            asked = {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}
            with client.chat.completions.stream(**asked) as stream:
                for _ in stream:
                    pass
                return _dumped(stream.get_final_completion().choices[0].message)

        return _loop(ask)

    return run


def sdk_async_agent(server: LocalOpenAI, *, streamed: bool = False) -> Callable[[], Any]:
    async def ask(client: openai.AsyncOpenAI, messages: list[dict[str, Any]]) -> dict[str, Any]:
        asked: dict[str, Any] = {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}
        if not streamed:
            completion = await client.chat.completions.create(**asked)
        else:
            async with client.chat.completions.stream(**asked) as stream:
                async for _ in stream:
                    pass
                completion = await stream.get_final_completion()
        return _dumped(completion.choices[0].message)

    async def run() -> dict[str, Any]:
        client = instrument_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-local"))
        try:
            return await _aloop(lambda messages: ask(client, messages))
        finally:
            await client.close()

    return run


def requests_agent(server: LocalOpenAI) -> Callable[[], Any]:
    import requests

    instrument_urllib3()

    def run() -> dict[str, Any]:
        def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
            body = {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}
            answer = requests.post(
                f"{server.base_url}/chat/completions", json=body, headers={"Authorization": "Bearer sk-local"}
            )
            return dict(answer.json()["choices"][0]["message"])

        return _loop(ask)

    return run


def urllib_agent(server: LocalOpenAI) -> Callable[[], Any]:
    import urllib.request

    instrument_urllib()

    def run() -> dict[str, Any]:
        def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
            body = json.dumps({"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}).encode()
            request = urllib.request.Request(
                f"{server.base_url}/chat/completions",
                data=body,
                headers={"Authorization": "Bearer sk-local", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request) as answer:
                return dict(json.loads(answer.read())["choices"][0]["message"])

        return _loop(ask)

    return run


def aiohttp_agent(server: LocalOpenAI) -> Callable[[], Any]:
    import aiohttp

    instrument_aiohttp()

    async def run() -> dict[str, Any]:
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer sk-local"}) as session:

            async def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
                body = {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}
                async with session.post(f"{server.base_url}/chat/completions", json=body) as answer:
                    return dict((await answer.json())["choices"][0]["message"])

            return await _aloop(ask)

    return run


AGENTS = {
    "openai sync": sdk_agent,
    "openai streamed": sdk_stream_agent,
    "openai async": sdk_async_agent,
    "openai async streamed": functools.partial(sdk_async_agent, streamed=True),
    "requests": requests_agent,
    "urllib": urllib_agent,
    "aiohttp": aiohttp_agent,
}


@pytest.mark.parametrize("how", list(AGENTS))
def test_the_python_api_forks_an_agent_on_every_capture_path(
    tmp_path: Path, server: LocalOpenAI, how: str
) -> None:
    agent = AGENTS[how](server)

    def run() -> Any:
        result = agent()
        return asyncio.run(result) if asyncio.iscoroutine(result) else result

    parent = tmp_path / "run.sftrace"
    with record("weather-agent", output=parent) as session:
        recorded_output = run()
        session.set_output(recorded_output)
    assert server.count("/chat/completions") == 2
    TOOL_RAN.clear()
    step = _steps(parent)["llm_request"][1]
    result = fork(parent, step=step, entrypoint=agent, output=tmp_path / "fork.sftrace")
    assert (result.status, result.error) == ("completed", None)
    assert (result.frozen_calls, result.live_calls) == (2, 1)
    assert result.result == recorded_output
    assert server.count("/chat/completions") == 3  # only the call from the fork point was sent
    assert TOOL_RAN == []  # served from the recording
    live, recorded = _last_response(tmp_path / "fork.sftrace"), _last_response(parent)
    assert sorted(live) == sorted(recorded)  # the live call recorded as a recording records it (a stream too)
    assert validate_bundle(result.output).valid
    assert diff_traces(parent, result.output).equivalent
