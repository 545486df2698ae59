"""A recording agent the crash campaign kills: ``python crash_agent.py OUT KIND CALLS SEED REPORT_FD``.

KIND is ``sync`` (tool and LLM calls in a loop, some failing), ``async`` (awaited async tools and
``allm_request``) or ``concurrent`` (``asyncio.gather`` batches plus threads carrying the context). After a
call has returned (its events flushed at the call boundary), the agent writes ``<key>\\n`` to REPORT_FD, so
the parent knows what must be on disk whatever instant the SIGKILL lands. ``done\\n`` follows the run.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import random
import sys
import threading

from stepfork.trace import allm_request, llm_request, record, trace_tool


class Flaky(RuntimeError):
    """The failure some calls raise, so error events are written too."""


@trace_tool
def lookup(key: str, blob: str) -> dict[str, str]:
    if key.endswith("7"):
        raise Flaky(f"lookup failed for {key}")
    return {"key": key, "blob": blob}


@trace_tool
async def alookup(key: str, blob: str) -> dict[str, str]:
    await asyncio.sleep(0)
    return {"key": key, "blob": blob}


def report(fd: int, key: str) -> None:
    os.write(fd, key.encode("ascii") + b"\n")  # < PIPE_BUF: atomic even from several threads


def sync_call(i: int, rng: random.Random, fd: int) -> None:
    key = f"k{i}"
    blob = "x" * rng.choice((10, 300, 5000))
    try:
        if i % 3 == 2:
            llm_request(model="m-1", input={"key": key, "blob": blob}, call=lambda: {"key": key})
        else:
            lookup(key, blob)
    except Flaky:
        pass
    report(fd, key)


async def async_call(i: int, rng: random.Random, fd: int) -> None:
    key = f"k{i}"
    blob = "y" * rng.choice((10, 300, 5000))

    async def answer() -> dict[str, str]:
        return {"key": key}

    if i % 3 == 2:
        await allm_request(model="m-1", input={"key": key, "blob": blob}, call=answer)
    else:
        await alookup(key, blob)
    report(fd, key)


async def concurrent_agent(calls: int, rng: random.Random, fd: int) -> None:
    i = 0
    while i < calls:
        batch = list(range(i, min(calls, i + 4)))
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(sync_call, n + calls, rng, fd))
            for n in batch[:1]
        ]
        for thread in threads:
            thread.start()
        await asyncio.gather(*(async_call(n, rng, fd) for n in batch))
        for thread in threads:
            thread.join()
        i += len(batch)


def main() -> None:
    out, kind, calls, seed, fd = (
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        int(sys.argv[4]),
        int(sys.argv[5]),
    )
    rng = random.Random(seed)
    if kind == "sync":
        with record("crash-sync", output=out, run_input={"calls": calls}) as session:
            for i in range(calls):
                sync_call(i, rng, fd)
            session.set_output({"calls": calls})
    elif kind == "async":

        async def run() -> None:
            async with record("crash-async", output=out, run_input={"calls": calls}):
                for i in range(calls):
                    await async_call(i, rng, fd)

        asyncio.run(run())
    else:

        async def run_concurrent() -> None:
            async with record("crash-concurrent", output=out, run_input={"calls": calls}):
                await concurrent_agent(calls, rng, fd)

        asyncio.run(run_concurrent())
    os.write(fd, b"done\n")


if __name__ == "__main__":
    main()
