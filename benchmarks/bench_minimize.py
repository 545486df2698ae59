"""Minimize: replays needed by the search ``minimize`` uses vs classic ddmin, over the same units; and
the wall time of a real minimization with forked attempts vs a subprocess per attempt.

A seeded suite of failing traces: 20 to 500 recorded calls, about one call in eight nested in the call
before it (a child that must not be kept without its parent), and a failure that depends on 1 to 5 of
the calls. The oracle stands in for a replay (a subset reproduces when it holds every needed call), so
the figure is the number of replays, which is what minimization costs (each replay is a process of its own).
Both searches go through the same memoized, parent-closing oracle (analysis/ddmin.py). Target (issue 5):
at most 0.5x classic ddmin's replays, with results no larger.

Second figure, wall time: the real ``minimize_trace`` on a recorded 100-event bundle (49 tool calls, the
failure needing 3 of them), through the forking zygote and through the subprocess-per-attempt fallback,
interleaved for ``WALL_ROUNDS`` rounds in the same run. The figure is the zygote's median wall time divided
by the fallback's (the baseline), with the replay count and the result checked identical on both paths.

Prints one row per (calls, needed) group, the overall ratio and the wall-time ratio; writes
benchmarks/results/minimize.json.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stepfork.analysis import minimize_trace
from stepfork.analysis._zygote.client import FORCE_SUBPROCESS_ENV
from stepfork.analysis.minimize.ddmin import MemoOracle, classic_ddmin, closure, dd_prefix

SIZES = (20, 50, 100, 200, 500)
NEEDED = (1, 2, 3, 4, 5)
SEEDS = range(6)
WALL_ROUNDS = 5

# 49 fetches (100 events with run start and end); the agent alerts when three sources are bad. Against
# {"alert": false} the minimal failing subset is the three bad calls.
WALL_AGENT = textwrap.dedent(
    """
    from stepfork.trace import trace_tool

    BAD = {5, 23, 41}

    @trace_tool
    def fetch(source: int) -> dict:
        return {"source": source, "bad": source in BAD, "body": "x" * 200}

    def run_agent():
        bad = 0
        for source in range(49):
            try:
                bad += fetch(source)["bad"]
            except Exception:
                pass  # a call missing from the candidate fails before its body; the agent carries on
        return {"alert": bad >= 3}
    """
)


def seeded_case(n: int, k: int, seed: int) -> tuple[dict[int, int | None], frozenset[int]]:
    """The parents map of ``n`` calls and the calls the failure needs (closed under parents)."""
    rng = random.Random(f"{n}-{k}-{seed}")
    parents: dict[int, int | None] = {0: None}
    for unit in range(1, n):
        parents[unit] = unit - 1 if rng.random() < 0.125 else None
    return parents, closure(rng.sample(range(n), k), parents)


def run_case(n: int, k: int, seed: int) -> dict[str, int]:
    """Replays and result sizes of both searches on one seeded case."""
    parents, needed = seeded_case(n, k, seed)

    def oracle(subsets: Sequence[frozenset[int]]) -> list[bool]:
        return [needed <= s for s in subsets]

    ours = dd_prefix(list(range(n)), MemoOracle(oracle, parents), parents=parents)
    classic = classic_ddmin(list(range(n)), MemoOracle(oracle, parents), parents=parents)
    assert set(ours.units) == needed, (n, k, seed)
    return {
        "ours": ours.tests,
        "classic": classic.tests,
        "ours_size": len(ours.units),
        "classic_size": len(classic.units),
    }


def _minimize_once(project: Path, force_subprocess: bool) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one ``minimize_trace`` of ``project``'s bundle, and its result without the output."""
    previous = os.environ.pop(FORCE_SUBPROCESS_ENV, None)
    if force_subprocess:
        os.environ[FORCE_SUBPROCESS_ENV] = "1"
    try:
        started = time.perf_counter()
        result = minimize_trace(
            project / "fetch.sftrace",
            "bench_wall_agent:run_agent",
            expect_output=project / "expected.json",
            output=project / "minimal.sftrace",
            overwrite=True,
            import_root=project,
        )
        elapsed = time.perf_counter() - started
    finally:
        os.environ.pop(FORCE_SUBPROCESS_ENV, None)
        if previous is not None:
            os.environ[FORCE_SUBPROCESS_ENV] = previous
    return elapsed, {k: v for k, v in result.to_dict().items() if k != "output"}


def measure_wall(rounds: int = WALL_ROUNDS) -> dict[str, Any]:
    """Record the 100-event bundle, minimize it ``rounds`` times on each path (interleaved); return the
    medians (seconds), per-replay times, the ratio zygote / subprocess, and the shared result."""
    with tempfile.TemporaryDirectory(prefix="bench-minimize-") as tmp:
        project = Path(tmp)
        (project / "bench_wall_agent.py").write_text(WALL_AGENT)
        script = (
            "from stepfork.trace import record\nimport bench_wall_agent as a\n"
            "with record('fetch-agent', output='fetch.sftrace') as s:\n    s.set_output(a.run_agent())\n"
        )
        subprocess.run([sys.executable, "-c", script], cwd=project, check=True)
        (project / "expected.json").write_text(json.dumps({"alert": False}))
        times: dict[str, list[float]] = {"zygote": [], "subprocess": []}
        results = []
        for _ in range(rounds):
            for path in times:
                elapsed, result = _minimize_once(project, force_subprocess=path == "subprocess")
                times[path].append(elapsed)
                results.append(result)
    if any(r != results[0] for r in results):
        raise AssertionError(f"the two paths disagree: {results}")
    medians = {path: statistics.median(values) for path, values in times.items()}
    replays = results[0]["replay_attempts"]
    return {
        "events": results[0]["original_events"],
        "replays": replays,
        "kept_steps": results[0]["kept_steps"],
        "minimal": results[0]["minimal"],
        "rounds": rounds,
        "median_s": medians,
        "per_replay_ms": {path: 1000 * m / replays for path, m in medians.items()},
        "samples_s": times,
        "ratio": medians["zygote"] / medians["subprocess"],
    }


def main() -> None:
    """Run the suite, print the table and the overall ratio, then the wall-time comparison; write the JSON
    results."""
    rows = []
    total_ours = total_classic = 0
    larger = 0
    print(f"{'calls':>6} {'needed':>6} {'ours':>8} {'classic':>8} {'ratio':>6}")
    for n in SIZES:
        for k in NEEDED:
            cases = [run_case(n, k, seed) for seed in SEEDS]
            ours = statistics.mean(c["ours"] for c in cases)
            classic = statistics.mean(c["classic"] for c in cases)
            larger += sum(c["ours_size"] > c["classic_size"] for c in cases)
            total_ours += sum(c["ours"] for c in cases)
            total_classic += sum(c["classic"] for c in cases)
            rows.append({"calls": n, "needed": k, "ours": ours, "classic": classic, "ratio": ours / classic})
            print(f"{n:>6} {k:>6} {ours:>8.1f} {classic:>8.1f} {ours / classic:>6.2f}")
    overall = total_ours / total_classic
    worst = max(r["ratio"] for r in rows)
    print(
        f"overall: {overall:.2f}x classic ddmin's replays (worst group {worst:.2f}x); "
        f"results larger than ddmin's: {larger}"
    )
    wall = measure_wall()
    print(
        f"wall time, {wall['events']}-event bundle, {wall['replays']} replays (median of {wall['rounds']}): "
        f"zygote {wall['median_s']['zygote']:.2f} s ({wall['per_replay_ms']['zygote']:.0f} ms/replay), "
        f"subprocess per attempt {wall['median_s']['subprocess']:.2f} s "
        f"({wall['per_replay_ms']['subprocess']:.0f} ms/replay): {wall['ratio']:.2f}x"
    )
    out = Path(__file__).resolve().parent / "results" / "minimize.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "overall_ratio": overall,
                "worst_group_ratio": worst,
                "larger_results": larger,
                "groups": rows,
                "wall_time": wall,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
