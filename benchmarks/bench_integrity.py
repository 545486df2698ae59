"""Integrity verification throughput as a ratio to plain hashlib SHA-256 over the same files (issue 7 part 5).

Baseline, per bundle: ``hashlib.sha256`` of the bytes of manifest.json, events.jsonl and redactions.json,
each read into one reused 1 MiB buffer (``readinto`` + ``update``): the least any verifier must do. Measured:
``stepfork.trace.verify_bundle_integrity`` on the same bundle (safe open with ``O_NOFOLLOW``, fstat, read
and parse integrity.json, streamed ``hashlib.file_digest`` of the three files, compare).

Ratio = verification throughput / baseline throughput = baseline seconds / verification seconds, so 1.0 is
"as fast as plain hashing" and the target is >= 0.8. Baseline and verification run interleaved, best of
``REPEATS``, on bundles recorded in a temporary directory in the same run (a warm page cache for both).

Run: ``hatch run bench:all integrity`` or ``python benchmarks/bench_integrity.py``; JSON goes to
benchmarks/results/integrity.json.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stepfork.trace import record, trace_tool, verify_bundle_integrity

RESULTS = Path(__file__).resolve().parent / "results" / "integrity.json"
PAYLOAD_FILES = ("manifest.json", "events.jsonl", "redactions.json")
REPEATS = 7
MIN_SECONDS = 3.0
CHUNK = 1024 * 1024
TARGET = 0.8

# (label, calls, payload bytes per call): many small events, and a few large payloads
BUNDLES = (("10k small events", 5_000, 200), ("100 MB, 20 payloads", 20, 5 * 1024 * 1024))


@trace_tool
def payload(i: int, size: int) -> str:
    return ("abcdefghij" * (size // 10 + 1))[:size]


def make_bundle(root: Path, label: str, calls: int, size: int) -> Path:
    """Record ``calls`` calls returning ``size``-byte strings into a bundle under ``root``."""
    path = root / (label.replace(" ", "-").replace(",", "") + ".sftrace")
    with record("bench-integrity", output=path):
        for i in range(calls):
            payload(i, size)
    return path


def baseline(bundle: Path) -> None:
    """Plain SHA-256 of the three payload files, read into one reused 1 MiB buffer."""
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    for name in PAYLOAD_FILES:
        digest = hashlib.sha256()
        with open(bundle / name, "rb", buffering=0) as handle:
            while size := handle.readinto(buffer):
                digest.update(view[:size])
        digest.hexdigest()


def verify(bundle: Path) -> None:
    result = verify_bundle_integrity(bundle)
    if not result.verified:
        raise AssertionError(f"{bundle} does not verify: {result.issues}")


def best_interleaved(bundle: Path) -> tuple[float, float]:
    """Best seconds of the baseline and of verification, run alternately ``REPEATS`` times and for at least
    ``MIN_SECONDS`` (small bundles get more rounds: the machine is shared, the best round is the signal)."""
    base, measured = float("inf"), float("inf")
    rounds, started_all = 0, time.perf_counter()
    while rounds < REPEATS or time.perf_counter() - started_all < MIN_SECONDS:
        rounds += 1
        started = time.perf_counter()
        baseline(bundle)
        base = min(base, time.perf_counter() - started)
        started = time.perf_counter()
        verify(bundle)
        measured = min(measured, time.perf_counter() - started)
    return base, measured


def main() -> dict[str, Any]:
    """Run the benchmark, print a table, write benchmarks/results/integrity.json; return the figures."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, calls, size in BUNDLES:
            bundle = make_bundle(Path(tmp), label, calls, size)
            total = sum((bundle / name).stat().st_size for name in PAYLOAD_FILES)
            base, measured = best_interleaved(bundle)
            rows.append(
                {
                    "bundle": label,
                    "bytes": total,
                    "baseline_mb_s": round(total / base / 2**20, 1),
                    "verify_mb_s": round(total / measured / 2**20, 1),
                    "ratio": round(base / measured, 3),
                }
            )
    print(f"{'bundle':<22} {'MB':>7} {'sha256 MB/s':>12} {'verify MB/s':>12} {'ratio':>6}")
    for row in rows:
        print(
            f"{row['bundle']:<22} {row['bytes'] / 2**20:>7.1f} {row['baseline_mb_s']:>12} "
            f"{row['verify_mb_s']:>12} {row['ratio']:>6}"
        )
    met = all(row["ratio"] >= TARGET for row in rows)
    print(f"target ratio >= {TARGET}: {'met' if met else 'NOT met'}")
    figures = {
        "benchmark": "integrity",
        "python": platform.python_version(),
        "target": TARGET,
        "met": met,
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    sys.exit(0 if main()["met"] else 1)
