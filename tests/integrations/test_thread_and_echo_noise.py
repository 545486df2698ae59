"""Noise on agents written as the OpenAI SDK's docs write them, through the real CLI (NEWCOMER2 findings 11
and 12; docs/diff.md "Noise rules").

The agents import no Stepfork: ``stepfork record -- python agent.py`` records them against the local
OpenAI-compatible server (helpers/local_openai.py: a fresh completion id, ``created``,
``system_fingerprint``, tool-call ids and ``x-request-id`` per response).

- The function-calling guide's loop (``messages.append(completion.choices[0].message)``) echoes the
  assistant message in its next request; recorded against the API's older message shape (no
  ``annotations``) and its current one (``annotations: []``), the two diff EQUIVALENT, the echoed field
  listed as a new field; ``parallel_tool_calls=False`` added to the request is still CHANGED.
- Chat completions made from worker threads (``threading.Thread``, as the threading docs start one, and
  a ``ThreadPoolExecutor``) beside an ``asyncio.gather`` of ``AsyncOpenAI`` calls: the threads' calls are
  recorded as ``http`` calls, and three recordings of the same code diff EQUIVALENT (their fingerprints,
  ids and headers are the provider's); a changed prompt in a thread is CHANGED at that call's request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from local_openai import LocalOpenAI, serving

STEPFORK = Path(sys.executable).parent / "stepfork"

GUIDE_LOOP = '''"""The OpenAI function-calling guide's loop. EXTRA: the second request's other arguments."""
import json
import os

from openai import OpenAI

client = OpenAI()
tools = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get current temperature for a given location.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"], "additionalProperties": False},
        "strict": True,
    },
}]


def get_weather(city):
    return {"city": city, "celsius": 21}


messages = [{"role": "user", "content": "What is the weather like in Paris today?"}]
completion = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools)
messages.append(completion.choices[0].message)  # append model's function call message
for tool_call in completion.choices[0].message.tool_calls or []:
    args = json.loads(tool_call.function.arguments)
    result = get_weather(args["city"])
    messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": str(result)})
extra = json.loads(os.environ.get("EXTRA", "{}"))
completion_2 = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=tools, **extra)
print(json.dumps({"answer": completion_2.choices[0].message.content}))
'''

THREADS = '''"""Concurrent model calls: asyncio.gather over AsyncOpenAI, threads over the sync client."""
import asyncio
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from openai import AsyncOpenAI, OpenAI

aclient = AsyncOpenAI()
client = OpenAI()
CITIES = ["Paris", "London", "Tokyo"]
ASK = os.environ.get("ASK", "Translate the name of the city {city}")


async def summarize(city):
    r = await aclient.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": f"One line about {city}"}])
    return r.choices[0].message.content


def translate(city, into=None):
    r = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": ASK.format(city=city)}])
    if into is not None:
        into[city] = r.choices[0].message.content
    return r.choices[0].message.content


async def main():
    summaries = await asyncio.gather(*(summarize(c) for c in CITIES))
    with ThreadPoolExecutor(3) as pool:
        pooled = list(pool.map(translate, CITIES))
    found = {}
    workers = [threading.Thread(target=translate, args=(city, found)) for city in CITIES]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(json.dumps({"summaries": summaries, "pooled": pooled, "threads": [found[c] for c in CITIES]}))


asyncio.run(main())
'''


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def stepfork(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, capture_output=True, text=True, check=False, env=env, timeout=300
    )


def recorder(folder: Path, server: LocalOpenAI, script: str) -> Callable[..., str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-local", "NO_COLOR": "1"}

    def record(name: str, **extra: str) -> str:
        done = stepfork(folder, "record", "-o", name, "--", sys.executable, script, env={**env, **extra})
        assert done.returncode == 0, done.stdout + done.stderr
        return name

    return record


@pytest.mark.slow
def test_the_guides_loop_echoing_a_new_message_field_is_equivalent(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    (tmp_path / "guide.py").write_text(GUIDE_LOOP)
    record = recorder(tmp_path, server, "guide.py")
    server.omit = {"annotations"}
    older = record("older.sftrace")
    server.omit = set()
    newer = record("newer.sftrace")
    echoed = [
        m for body in server.posted("/chat/completions") for m in body["messages"] if m["role"] == "assistant"
    ]
    assert echoed[0].get("annotations") is None  # the two shapes of the message
    assert echoed[-1].get("annotations") == []
    done = stepfork(tmp_path, "diff", older, newer, "--show-ignored")
    assert done.returncode == 0, done.stdout
    assert "Result: BEHAVIOR EQUIVALENT" in done.stdout
    assert "input.body.messages[1].annotations: (absent) -> [] (new field)" in done.stdout, done.stdout
    changed = record("no_parallel.sftrace", EXTRA=json.dumps({"parallel_tool_calls": False}))
    verdict = stepfork(tmp_path, "diff", newer, changed, "--json")
    assert verdict.returncode == 1, verdict.stdout
    first = next(c for s in json.loads(verdict.stdout)["steps"] for c in s.get("changes", []))
    assert first["path"] == "input.body.parallel_tool_calls", first


@pytest.mark.slow
def test_llm_calls_from_worker_threads_are_compared_by_the_provider_rules(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    (tmp_path / "threads.py").write_text(THREADS)
    record = recorder(tmp_path, server, "threads.py")
    runs = [record(f"run{n}.sftrace") for n in range(3)]
    shown = stepfork(tmp_path, "diff", runs[0], runs[1], "--json")
    report = json.loads(shown.stdout)
    http = [s for s in report["steps"] if s["step_type"] == "http" and "chat/completions" in s["label"]]
    assert len(http) >= 3, [s["label"] for s in report["steps"]]  # the threads' calls: http calls
    for other in runs[1:]:
        done = stepfork(tmp_path, "diff", runs[0], other, "--show-ignored")
        assert done.returncode == 0, done.stdout
        assert "output.json.system_fingerprint: " in done.stdout
        assert "(openai-chat-completion)" in done.stdout
    assert stepfork(tmp_path, "diff", runs[0], runs[1], "--strict").returncode == 1
    asked = record("asked.sftrace", ASK="Translate the name of {city} into French")
    verdict = stepfork(tmp_path, "diff", runs[0], asked, "--json")
    assert verdict.returncode == 1, verdict.stdout
    first = next(c for s in json.loads(verdict.stdout)["steps"] for c in s.get("changes", []))
    assert first["path"] == "input.body.messages[0].content", first
