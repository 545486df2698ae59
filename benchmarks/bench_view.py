"""``stepfork view`` cost as a ratio to loading the same bundle (issue 16).

Baseline: ``stepfork.trace.load_trace`` of a bundle (parse and validate every event: the least a viewer
must do). Measured: ``stepfork.analysis.view.write_trace_view`` of the same bundle (stream, validate,
redact, serialize and write the page). Ratio = view seconds / load seconds (best of ``REPEATS``,
interleaved). Also reported: the page's size over events.jsonl (target <= 1.5) and the writer's peak
traced memory over events.jsonl (streaming: far below 1).

Run: ``hatch run bench:all view`` or ``python benchmarks/bench_view.py``; JSON goes to
benchmarks/results/view.json.
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from stepfork.analysis.view import write_trace_view
from stepfork.trace import record, trace_tool
from stepfork.trace.bundle import load_trace

RESULTS = Path(__file__).resolve().parent / "results" / "view.json"
REPEATS = 5
SIZE_TARGET = 1.5
BUNDLES = (("10k calls", 10_000, 100), ("200 calls of 50 kB", 200, 50_000))


@trace_tool
def lookup(i: int, size: int) -> dict[str, object]:
    return {"i": i, "text": ("abcdefghij" * (size // 10 + 1))[:size]}


def make_bundle(root: Path, label: str, calls: int, size: int) -> Path:
    path = root / (label.replace(" ", "-") + ".sftrace")
    with record("bench-view", output=path):
        for i in range(calls):
            lookup(i, size)
    return path


def measure(bundle: Path, out: Path) -> dict[str, float]:
    load, view = float("inf"), float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        load_trace(bundle)
        load = min(load, time.perf_counter() - started)
        started = time.perf_counter()
        write_trace_view(bundle, out, overwrite=True)
        view = min(view, time.perf_counter() - started)
    events = (bundle / "events.jsonl").stat().st_size
    tracemalloc.start()
    write_trace_view(bundle, out, overwrite=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "load_seconds": load,
        "view_seconds": view,
        "ratio": view / load,
        "events_bytes": events,
        "size_ratio": out.stat().st_size / events,
        "peak_memory_ratio": peak / events,
    }


def main() -> None:
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for label, calls, size in BUNDLES:
            rows[label] = measure(make_bundle(root, label, calls, size), root / "view.html")
    print(f"{'bundle':<22}{'load s':>9}{'view s':>9}{'ratio':>7}{'size/jsonl':>12}{'peak/jsonl':>12}")
    for label, r in rows.items():
        print(
            f"{label:<22}{r['load_seconds']:>9.3f}{r['view_seconds']:>9.3f}{r['ratio']:>7.2f}"
            f"{r['size_ratio']:>12.2f}{r['peak_memory_ratio']:>12.3f}"
        )
    ok = all(r["size_ratio"] <= SIZE_TARGET for r in rows.values())
    print(f"size target <= {SIZE_TARGET}: {'met' if ok else 'MISSED'}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {"python": sys.version.split()[0], "machine": platform.machine(), "bundles": rows}
    RESULTS.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
