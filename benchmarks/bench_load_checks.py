"""What the loader's refusal checks cost: ``load_verified_trace`` against ``load_trace`` on the same bundle.

Every command that replays or rewrites a bundle loads it with ``stepfork.trace.load_verified_trace``: the
integrity.json digests, a finished run's event count, and (``validation.replay_issues``) strict validation
of the events' metadata and every stored payload hash, each proven by orjson's sorted encoding first
(``canonical.canonical_of_fingerprint``), the exact canonical rule only where that cannot. Baseline: the
plain ``load_trace`` of the same bundle (parse and build the events). Measured: ``load_verified_trace``.

Ratio = measured seconds / baseline seconds (1.0: the checks are free); ``checks_ratio`` is the share
of the refusal checks alone (``validation.replay_issues`` on the loaded trace) against the same
baseline, the rest of the difference being integrity.json's hashing. Also measured: the payload hash
check alone with the proof first (``payload_hash_issues``) and with the exact rule only, as a ratio of
the two. Best of ``REPEATS``, interleaved, on bundles recorded in a temporary directory in the same run.

Run: ``hatch run bench:all load_checks`` or ``python benchmarks/bench_load_checks.py``; JSON goes to
benchmarks/results/load_checks.json.
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stepfork.trace import load_trace, load_verified_trace, record, trace_tool
from stepfork.trace._format import HASHED_FIELDS
from stepfork.trace._validation_checks import payload_hash_issues
from stepfork.trace.canonical import fingerprint
from stepfork.trace.validation import replay_issues

RESULTS = Path(__file__).resolve().parent / "results" / "load_checks.json"
REPEATS = 5
CALLS = (1, 1_000, 5_000)


@trace_tool
def search(query: str, page: int) -> dict[str, Any]:
    return {
        "query": query,
        "results": [{"title": f"t{i}", "score": i * 0.5, "text": "x" * 80} for i in range(10)],
    }


def make_bundle(root: Path, calls: int) -> Path:
    """Record ``calls`` tool calls (about 1 KB of output each) into a bundle under ``root``."""
    path = root / f"load-{calls}.sftrace"
    with record("bench-load-checks", output=path) as session:
        for i in range(calls):
            search(f"query {i}", i)
        session.set_output({"ok": True})
    return path


def _best(function: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def _exact_hashes(events: list[Any]) -> None:
    """The payload hash check with the exact canonical rule only (what ``payload_hash_issues`` did)."""
    for event in events:
        for field, stored in zip(
            HASHED_FIELDS[event.type], (event.input_hash, event.output_hash), strict=True
        ):
            if field is not None and stored is not None:
                assert fingerprint(getattr(event, field)) == stored


def measure(bundle: Path, repeats: int = REPEATS) -> dict[str, float]:
    """Seconds of each measure on ``bundle`` (best of ``repeats``) and the two ratios."""
    plain = verified = checks = proof = exact = float("inf")
    trace = load_trace(bundle)
    events = list(trace.events)
    for _ in range(repeats):  # interleaved: a machine slowing down slows both sides
        plain = min(plain, _best(lambda: load_trace(bundle), 1))
        verified = min(verified, _best(lambda: load_verified_trace(bundle), 1))
        checks = min(checks, _best(lambda: replay_issues(trace), 1))
        proof = min(proof, _best(lambda: [payload_hash_issues(e) for e in events], 1))
        exact = min(exact, _best(lambda: _exact_hashes(events), 1))
    return {
        "load_trace_s": plain,
        "load_verified_trace_s": verified,
        "verified_ratio": verified / plain,
        "checks_s": checks,
        "checks_ratio": checks / plain,
        "hashes_proof_first_s": proof,
        "hashes_exact_s": exact,
        "proof_speedup": exact / proof,
    }


def measure_all(calls: tuple[int, ...] = CALLS, repeats: int = REPEATS) -> dict[str, dict[str, float]]:
    """:func:`measure` on one bundle per count in ``calls``."""
    with tempfile.TemporaryDirectory() as tmp:
        return {f"{n} calls": measure(make_bundle(Path(tmp), n), repeats) for n in calls}


def main() -> None:
    rows = measure_all()
    print(f"{'bundle':<14}{'load_trace':>12}{'verified':>12}{'ratio':>8}{'checks':>8}{'proof x':>9}")
    for label, row in rows.items():
        print(
            f"{label:<14}{row['load_trace_s'] * 1000:>10.1f}ms{row['load_verified_trace_s'] * 1000:>10.1f}ms"
            f"{row['verified_ratio']:>8.2f}{row['checks_ratio']:>8.2f}{row['proof_speedup']:>9.2f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    meta = {"python": sys.version.split()[0], "platform": platform.platform()}
    RESULTS.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
