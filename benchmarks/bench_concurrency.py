"""Recording cost of the concurrency facts (issue 12, "Concurrency that holds").

Since issue 12 every recorded call also notes its lane (thread and asyncio task), two clock reads and,
in asyncio, the other tasks alive when it started (``stepfork.trace.concurrency``, written as
``concurrency.json``). The **baseline** is the same recorded run without those facts (the plain event
log, as before issue 12), selected by the internal switch ``concurrency.RECORD_FACTS`` that exists for
this benchmark only. Workloads, each a ``@trace_tool`` call taking a small chat-like payload:

- ``loop``: ``CALLS`` calls one after the other;
- ``threads``: ``CALLS`` calls on a 4-thread pool (``contextvars.copy_context().run``, as the docs say);
- ``gather-10`` / ``gather-200``: ``asyncio.gather`` of 10 / 200 tasks, each making one async call, run
  until ``CALLS`` calls were made (a large gather is where noting the alive tasks could grow per call).

Per-call CPU time (``time.process_time``) of the calls inside an open session (opening and finishing it
are not per-call costs); with and without the facts alternate in blocks within each round, in a rotating
order, one warm-up round not counted; the figure is the **median over ``ROUNDS`` rounds of the per-round
ratio** facts / no facts (lowest and highest beside it). Target: a few percent. Run: ``hatch run bench:all
concurrency`` or ``python benchmarks/bench_concurrency.py``; ``STEPFORK_BENCH_CONCURRENCY_ROUNDS`` and
``STEPFORK_BENCH_CONCURRENCY_CALLS`` change the size; JSON goes to benchmarks/results/concurrency.json.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from stepfork.trace import concurrency, record, trace_tool

RESULTS = Path(__file__).resolve().parent / "results" / "concurrency.json"
CALLS = int(os.environ.get("STEPFORK_BENCH_CONCURRENCY_CALLS", "400"))
ROUNDS = int(os.environ.get("STEPFORK_BENCH_CONCURRENCY_ROUNDS", "9"))
BLOCKS = 4  # each round alternates facts on / off this many times (CALLS / BLOCKS calls per block)
PAYLOAD = {
    "model": "gpt-bench",
    "messages": [{"role": "user", "content": "Book a table for two in Oslo tonight, near the harbour. " * 4}],
}


@trace_tool
def tool(request: dict[str, Any], n: int) -> dict[str, Any]:
    return {"ok": True, "n": n}


@trace_tool
async def atool(request: dict[str, Any], n: int) -> dict[str, Any]:
    await asyncio.sleep(0)  # a real suspension: the siblings interleave, as with network calls
    return {"ok": True, "n": n}


def _loop(calls: int) -> None:
    for n in range(calls):
        tool(PAYLOAD, n)


def _threads(pool: ThreadPoolExecutor) -> Callable[[int], None]:
    def run(calls: int) -> None:
        futures = [pool.submit(contextvars.copy_context().run, tool, PAYLOAD, n) for n in range(calls)]
        for future in futures:
            future.result()

    return run


def _gather(width: int) -> Callable[[int], None]:
    async def fan_out(calls: int) -> None:
        done = 0
        while done < calls:
            batch = min(width, calls - done)
            await asyncio.gather(*(atool(PAYLOAD, done + i) for i in range(batch)))
            done += batch

    def run(calls: int) -> None:
        asyncio.run(fan_out(calls))

    return run


def _timed_block(workload: Callable[[int], None], calls: int, facts: bool, out: Path) -> float:
    """CPU seconds of ``calls`` calls of ``workload`` inside one recording, facts on or off."""
    concurrency.RECORD_FACTS = facts
    try:
        with record("bench-concurrency", output=out, overwrite=True):
            start = time.process_time()
            workload(calls)
            return time.process_time() - start
    finally:
        concurrency.RECORD_FACTS = True


def measure(workload: Callable[[int], None], folder: Path, *, calls: int, rounds: int) -> dict[str, float]:
    """Per-call µs with and without the facts (medians) and the median per-round ratio."""
    block = max(1, calls // BLOCKS)
    per_call: dict[bool, list[float]] = {True: [], False: []}
    ratios: list[float] = []
    order = [True, False]
    for round_ in range(rounds + 1):  # round 0 warms up and is not counted
        gc.collect()
        spent = {True: 0.0, False: 0.0}
        for _ in range(BLOCKS):
            for facts in order:
                spent[facts] += _timed_block(workload, block, facts, folder / f"b{int(facts)}.sftrace")
            order.reverse()
        if round_ == 0:
            continue
        for facts in (True, False):
            per_call[facts].append(spent[facts] / (block * BLOCKS))
        ratios.append(spent[True] / spent[False])
    return {
        "with_facts_us": statistics.median(per_call[True]) * 1e6,
        "without_us": statistics.median(per_call[False]) * 1e6,
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
    }


def measure_all(*, calls: int, rounds: int) -> dict[str, dict[str, float]]:
    """``{workload name: row}`` for the four workloads of the module docstring."""
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=4) as pool:
        workloads: dict[str, Callable[[int], None]] = {
            "loop": _loop,
            "threads": _threads(pool),
            "gather-10": _gather(10),
            "gather-200": _gather(200),
        }
        for name, workload in workloads.items():
            folder = Path(tmp) / name
            folder.mkdir()
            rows[name] = measure(workload, folder, calls=calls, rounds=rounds)
    return rows


def main() -> None:
    rows = measure_all(calls=CALLS, rounds=ROUNDS)
    print(f"{'workload':<12}{'no facts':>12}{'with facts':>12}{'ratio':>22}")
    for name, row in rows.items():
        print(
            f"{name:<12}{row['without_us']:>10.1f}us{row['with_facts_us']:>10.1f}us"
            f"{row['ratio']:>9.3f}x ({row['ratio_min']:.3f}-{row['ratio_max']:.3f})"
        )
    print(
        f"CPU time per recorded call, median of {ROUNDS} rounds of {CALLS} calls per measure "
        "(range of the round ratios in brackets); target: a few percent"
    )
    RESULTS.parent.mkdir(exist_ok=True)
    meta = {
        "python": list(sys.version_info[:3]),
        "machine": platform.machine(),
        "calls": CALLS,
        "rounds": ROUNDS,
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    RESULTS.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
