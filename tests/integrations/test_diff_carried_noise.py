"""A value a tool handed out that differs between two recordings only as noise is noise wherever the agent
carries it on (NEWCOMER3 F1; docs/diff.md "Noise rules").

The agent is OpenAI's function-calling loop as OpenAI's guide writes it (``messages.append(...)``, the tool
result ``json.dumps``'ed into the ``tool`` message), on the real SDK against a real OpenAI-compatible server
on 127.0.0.1 that echoes what the tools said in its answer. Its tools return a station's observation time
(ten minutes before the run: outside the run's window, so no clock-reading rule explains it) and an epoch
number. Two recordings of the same code diff EQUIVALENT through the real CLI; an agent that passes on the
other tool's time, or changes the time it sends, is still CHANGED, and the report shows the place that
differs, not the renamed ids in front of it.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import openai
from local_openai import LocalOpenAI, kept, serving

from stepfork.integrations.openai import instrument_openai
from stepfork.trace import load_trace, record, trace_tool

STEPFORK = Path(sys.executable).parent / "stepfork"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
            },
        },
    }
    for name, description in (("get_weather", "Current weather"), ("get_air_quality", "Air quality index"))
]


def _observed() -> str:
    # the station's last reading: a clock value the tool hands out, outside the agent's run
    return (datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=10)).isoformat()


@trace_tool
def get_weather(location: str) -> dict[str, Any]:
    return {
        "location": location,
        "temp": 14,
        "observation_id": str(uuid.uuid4()),
        "updated_at": int(time.time() * 1000) - 600_000,
        "observed_at": _observed(),
    }


@trace_tool
def get_air_quality(location: str) -> dict[str, Any]:
    return {"location": location, "aqi": 42, "observed_at": _observed()}


CALLS = {"get_weather": get_weather, "get_air_quality": get_air_quality}


def run_agent(client: Any, variant: str) -> dict[str, Any]:
    messages: list[Any] = [{"role": "user", "content": "What's the weather like in Paris today?"}]
    results: dict[str, dict[str, Any]] = {}
    while True:
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        msg = completion.choices[0].message
        if not msg.tool_calls:
            weather = results["get_weather"]
            told = results["get_air_quality" if variant == "swapped" else "get_weather"]
            return {
                "answer": msg.content,
                "weather": weather,
                "observed": told["observed_at"],
                "summary": f"observed {told['observed_at']} (updated {weather['updated_at']})",
                "finished_at": datetime.datetime.now().isoformat(),  # the run's own clock
            }
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            result = CALLS[call.function.name](**json.loads(call.function.arguments))
            results[call.function.name] = result
            sent = dict(result)
            if variant == "minutes" and call.function.name == "get_weather":
                sent["observed_at"] = result["observed_at"][:16]  # the agent changed what it sends
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(sent)})


def recorded(server: LocalOpenAI, folder: Path, name: str, variant: str = "same") -> Path:
    sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0)
    client = instrument_openai(kept(sdk))
    bundle = folder / f"{name}.sftrace"
    with record("weather-agent", output=bundle) as session:
        session.set_output(run_agent(client, variant))
    return bundle


def diff(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), "diff", *args], cwd=folder, capture_output=True, text=True, check=False, timeout=300
    )


def test_a_tool_time_passed_on_in_the_next_request_and_the_output_is_noise_and_a_wrong_one_is_not(
    tmp_path: Path,
) -> None:
    with serving() as server:
        base = recorded(server, tmp_path, "base")
        same = recorded(server, tmp_path, "same")
        swapped = recorded(server, tmp_path, "swapped", "swapped")
        minutes = recorded(server, tmp_path, "minutes", "minutes")
    outputs = [load_trace(b).events[-1].output for b in (base, same)]
    assert outputs[0]["observed"] != outputs[1]["observed"]  # the two runs' times differ
    assert outputs[0]["observed"] in outputs[0]["answer"]  # and the model's answer quotes it

    equal = diff(tmp_path, str(base), str(same), "--show-ignored")
    assert equal.returncode == 0, equal.stdout + equal.stderr
    assert "Result: BEHAVIOR EQUIVALENT" in equal.stdout
    assert "input.body.messages[2].content" in equal.stdout  # shown as ignored, not silently equal
    assert "output.summary" in equal.stdout

    other = diff(tmp_path, str(base), str(swapped), "--json")
    assert other.returncode == 1, other.stdout + other.stderr
    changes = [c["path"] for step in json.loads(other.stdout)["steps"] for c in step["changes"]]
    assert changes == ["output.observed", "output.summary"]  # the other tool's time, nothing else

    changed = diff(tmp_path, str(base), str(minutes))
    assert changed.returncode == 1, changed.stdout + changed.stderr
    lines = changed.stdout.splitlines()
    at = lines.index("  input.body.messages[2].content (first)")
    baseline, candidate = lines[at + 1], lines[at + 2]
    # the window around the first real difference: the time, not the renamed observation ids before it
    assert baseline.startswith('    baseline:  "...'), lines
    assert candidate.startswith('    candidate: "...'), lines
    assert '\\"observed_at\\": \\"' in baseline, baseline
    assert '\\"observed_at\\": \\"' in candidate, candidate
    assert "observation_id" not in baseline
