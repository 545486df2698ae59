"""`stepfork fork` of a real agent from its fork point on (docs/fork.md): what runs live, what the forked
bundle keeps of the frozen part, and calls from the agent's own threads.

The agent is OpenAI's function-calling loop as its guide writes it, on the real SDK against a real
OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py), with a shop's REST API on 127.0.0.1
(helpers/shop_api.py) that it reads with ``requests`` (captured by ``instrument_urllib3``, as
docs/integrations.md shows). Each test records the agent as a program, then runs the real ``stepfork``.

Three gaps this file closes:

- a captured request that is not an LLM call (an ``http`` call) after the fork point was refused as a
  tool, ``fork: live tool 'http GET http://127.0.0.1:PORT/orders/42' ... (--allow-live-tool)``, exit 1,
  while the same request from an uninstrumented client went through: the network is open from the fork
  point on. It now runs live, as in live replay;
- the frozen LLM calls copied into the forked bundle lost their token counts (``inspect`` showed none);
- a tool called from a ``threading.Thread`` the agent starts (no ``copy_context``) met three active
  sessions (the fork, its replay, its recording) and raised ``BoundaryContextError``, exit 1, where
  ``replay`` and ``record`` take such a call with an ``OrphanCallWarning``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import shop_api
from local_openai import LocalOpenAI, serving
from openai_turns import weather_program

from stepfork.trace import load_trace, validate_bundle

STEPFORK = Path(sys.executable).parent / "stepfork"

AGENT = '''
"""The function-calling loop of OpenAI's guide; the shop's API read with requests."""
import json
import os
import sys
import threading

import requests
from openai import OpenAI

from stepfork import record, trace_tool
from stepfork.integrations.openai import instrument_openai
from stepfork.integrations.urllib3 import instrument_urllib3

client = instrument_openai(OpenAI())
instrument_urllib3()
SHOP = os.environ["SHOP_URL"]
THREADED = os.environ.get("TOOLS_IN_THREADS") == "1"
TOOLS = {tools}


{weather_tool}

def run_tools(calls):
    """Each tool call, in a thread of its own when TOOLS_IN_THREADS=1 (started without copy_context)."""
    results = {}

    def run(call):
        results[call.id] = get_weather(**json.loads(call.function.arguments))

    if not THREADED:
        for call in calls:
            run(call)
        return results
    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def run_agent():
    flags = requests.get(f"{SHOP}/flags", timeout=5).json()
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    while True:
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = completion.choices[0].message
        if not message.tool_calls:
            order = requests.get(f"{SHOP}/orders/42", timeout=5).json()
            return {"answer": message.content, "flags": flags, "order": order["status"]}
        messages.append(message)
        results = run_tools(message.tool_calls)
        for call in message.tool_calls:
            content = json.dumps(results[call.id])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


if __name__ == "__main__":
    with record("weather-agent", output=sys.argv[1]) as session:
        session.set_output(run_agent())
'''


@pytest.fixture
def servers() -> Iterator[tuple[LocalOpenAI, shop_api.ShopApi]]:
    with serving() as model, shop_api.serving() as shop:
        yield model, shop


def _program(tmp_path: Path, model: LocalOpenAI, shop: shop_api.ShopApi, *, threaded: bool) -> dict[str, str]:
    """Write the agent into ``tmp_path``, record it there as ``run.sftrace``; its environment."""
    (tmp_path / "weather.py").write_text(weather_program(AGENT), encoding="utf-8")
    env = {
        **os.environ,
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-local-test-key",
        "SHOP_URL": shop.url,
        "PYTHONPATH": str(tmp_path),
        "TOOLS_IN_THREADS": "1" if threaded else "0",
    }
    done = subprocess.run(
        [sys.executable, "weather.py", "run.sftrace"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    sent = (model.count("/chat/completions"), shop.count("GET", "/flags"), shop.count("GET", "/orders/42"))
    assert sent == (2, 1, 1)
    return env


def _stepfork(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=folder, env=env, capture_output=True, text=True, check=False, timeout=180
    )


def _steps(bundle: Path, kind: str) -> list[int]:
    return [e.step for e in load_trace(bundle).events if str(getattr(e.type, "value", e.type)) == kind]


def _usage(folder: Path, env: dict[str, str], bundle: str) -> list[tuple[Any, ...]]:
    """``(label, prompt, completion, total tokens)`` of each ``llm_response``, as ``inspect --json`` shows."""
    shown = _stepfork(folder, env, "inspect", bundle, "--json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return [
        (row["label"], *(row["details"].get(f"{n}_tokens") for n in ("prompt", "completion", "total")))
        for row in json.loads(shown.stdout)["timeline"]
        if row["type"] == "llm_response"
    ]


def test_a_request_after_the_fork_point_goes_live_and_frozen_calls_keep_their_tokens(
    tmp_path: Path, servers: tuple[LocalOpenAI, shop_api.ShopApi]
) -> None:
    model, shop = servers
    env = _program(tmp_path, model, shop, threaded=False)
    step = _steps(tmp_path / "run.sftrace", "llm_request")[1]
    args = ["fork", "run.sftrace", "--step", str(step), "-e", "weather:run_agent", "-o", "f.sftrace"]
    done = _stepfork(tmp_path, env, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Status:       COMPLETED" in done.stdout
    assert "Frozen calls: 2\n" in done.stdout  # the first model call and the tool (the /flags GET aside)
    assert "Live calls:   2\n" in done.stdout  # the second model call and the GET of the order
    # before the fork point the GET of /flags was served from the recording, after it the order's was sent
    assert (shop.count("GET", "/flags"), shop.count("GET", "/orders/42")) == (1, 2)
    assert model.count("/chat/completions") == 3
    assert (tmp_path / "tool-ran.log").read_text() == "Paris\n"
    assert validate_bundle(tmp_path / "f.sftrace").valid
    # the frozen model call keeps the token counts (and label) it was recorded with; the live one has its own
    recorded, forked = _usage(tmp_path, env, "run.sftrace"), _usage(tmp_path, env, "f.sftrace")
    assert forked[0] == recorded[0]
    assert forked[0][0] == "openai/gpt-4o-mini"
    assert all(isinstance(count, int) and count > 0 for row in forked for count in row[1:])
    compared = _stepfork(tmp_path, env, "diff", "run.sftrace", "f.sftrace")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Result: BEHAVIOR EQUIVALENT" in compared.stdout


@pytest.mark.parametrize("at", ["model", "tool"])
def test_a_tool_called_from_the_agents_own_thread_forks_as_it_replays(
    tmp_path: Path, servers: tuple[LocalOpenAI, shop_api.ShopApi], at: str
) -> None:
    """At the second model call the threaded tool is frozen (served from the recording); at the tool it
    runs live, allowed. Either way its call reaches the fork, as it reaches a replay."""
    model, shop = servers
    env = _program(tmp_path, model, shop, threaded=True)
    replayed = _stepfork(tmp_path, env, "replay", "run.sftrace", "-e", "weather:run_agent")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    events = load_trace(tmp_path / "run.sftrace").events
    step = _steps(tmp_path / "run.sftrace", "llm_request")[1]
    if at == "tool":
        step = next(e.step for e in events if str(e.type) == "tool_call" and e.name == "get_weather")
    args = ["fork", "run.sftrace", "--step", str(step), "-e", "weather:run_agent", "-o", "f.sftrace"]
    done = _stepfork(tmp_path, env, *args, "--allow-live-tool", "get_weather")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BoundaryContextError" not in done.stdout + done.stderr
    assert "Status:       COMPLETED" in done.stdout
    assert (tmp_path / "tool-ran.log").read_text() == ("Paris\n" if at == "model" else "Paris\nParis\n")
    assert (shop.count("GET", "/flags"), shop.count("GET", "/orders/42")) == (1, 2)
    forked = load_trace(tmp_path / "f.sftrace")
    assert [e.name for e in forked.events if str(e.type) == "tool_call" and e.name == "get_weather"] == [
        "get_weather"
    ]
    assert validate_bundle(tmp_path / "f.sftrace").valid
