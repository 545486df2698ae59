"""An agent that fans out three tools with ``asyncio.gather`` (issue 12).

One LLM call plans which cities to look up, then ``asyncio.gather`` runs one ``fetch_weather`` per city;
the three calls overlap, so they are recorded interleaved and may reach a replay in any order: the default
replay ordering (``auto``) matches them by identity. The LLM is a local fake behind ``allm_request``; the
weather service a dict. ``run_nordic`` is the same agent on a trip whose first city has no reading: it
fails, and ``stepfork minimize`` reduces its 11 events to the 7 that reproduce the failure (the LLM call and
the one bad tool call).

    python fanout_agent.py record run.sftrace  # or: record-nordic failing.sftrace; --overwrite replaces
    stepfork replay run.sftrace --entrypoint fanout_agent:run_agent
"""

from __future__ import annotations

import asyncio
import functools
import sys
from typing import Any

from stepfork.trace import LLMOutput, TraceStorageError, allm_request, record, record_main, trace_tool

SYSTEM = "You plan city breaks: name three cities."
PROMPT = "Compare the weather in three cities for a city break."
NORDIC = "Compare the weather in three Nordic capitals."
READINGS = {"Lisbon": 24, "Rome": 27, "Vienna": 19, "Oslo": None, "Helsinki": 8, "Copenhagen": 12}


async def fake_llm(prompt: str) -> LLMOutput:
    """The planner model: three cities for the prompt."""
    await asyncio.sleep(0)
    cities = ["Helsinki", "Copenhagen", "Oslo"] if "Nordic" in prompt else ["Lisbon", "Rome", "Vienna"]
    return LLMOutput({"cities": cities}, prompt_tokens=len(prompt.split()), completion_tokens=6)


@trace_tool
async def fetch_weather(city: str) -> dict[str, Any]:
    """The weather service (a network call in a real agent): yields, so gathered calls overlap."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return {"city": city, "temp_c": READINGS[city]}


async def arun(prompt: str) -> dict[str, Any]:
    """Plan with the LLM, fan out the lookups, return the warmest city and all readings."""
    plan = await allm_request(
        model="planner-1",
        provider="fake",
        input={"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]},
        call=lambda: fake_llm(prompt),
    )
    answers = await asyncio.gather(*(fetch_weather(city) for city in plan["cities"]), return_exceptions=True)
    reports = [a for a in answers if not isinstance(a, Exception)]  # a failed lookup is skipped
    for report in reports:
        if report["temp_c"] is None:
            raise ValueError(f"no temperature reading for {report['city']}")
    if not reports:
        return {"warmest": None, "readings": {}}
    warmest = max(reports, key=lambda r: r["temp_c"])
    return {"warmest": warmest["city"], "readings": {r["city"]: r["temp_c"] for r in reports}}


def run_agent() -> dict[str, Any]:
    """Replay entrypoint of the city-break run."""
    return asyncio.run(arun(PROMPT))


def run_nordic() -> dict[str, Any]:
    """Replay entrypoint of the failing Nordic run."""
    return asyncio.run(arun(NORDIC))


def record_run(bundle: str, prompt: str = PROMPT, *, overwrite: bool = False) -> Any:
    """Record the agent on ``prompt`` into ``bundle``; return its output (or the failure's message).
    An existing bundle is replaced only with ``overwrite`` (else ``TraceStorageError``, code
    ``already_exists``, before the agent runs)."""

    async def main() -> Any:
        async with record("fanout-agent", output=bundle, overwrite=overwrite, run_input=prompt) as session:
            output = await arun(prompt)
            session.set_output(output)
        return output

    try:
        return asyncio.run(main())
    except TraceStorageError:  # a ValueError too: the bundle was not written, the agent did not fail
        raise
    except ValueError as exc:
        return {"failed": str(exc)}


def main(argv: list[str]) -> int:
    """``record|record-nordic BUNDLE.sftrace [--overwrite]``: record, print the result as JSON; 2 for bad
    input (one line)."""
    import fanout_agent  # record through the imported module (tagged values name their class)

    nordic = functools.partial(fanout_agent.record_run, prompt=NORDIC)
    return record_main(argv, {"record": fanout_agent.record_run, "record-nordic": nordic})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
