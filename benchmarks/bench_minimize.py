"""Minimize: replays needed by the search ``minimize`` uses vs classic ddmin, over the same units.

A seeded suite of failing traces: 20 to 500 recorded calls, about one call in eight nested in the call
before it (a child that must not be kept without its parent), and a failure that depends on 1 to 5 of
the calls. The oracle stands in for a replay (a subset reproduces when it holds every needed call), so
the figure is the number of replays, which is what minimization costs (each replay is a subprocess).
Both searches go through the same memoized, parent-closing oracle (analysis/ddmin.py). Target (issue 5):
at most 0.5x classic ddmin's replays, with results no larger.

Prints one row per (calls, needed) group and the overall ratio; writes benchmarks/results/minimize.json.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Sequence
from pathlib import Path

from stepfork.analysis.ddmin import MemoOracle, classic_ddmin, closure, dd_prefix

SIZES = (20, 50, 100, 200, 500)
NEEDED = (1, 2, 3, 4, 5)
SEEDS = range(6)


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


def main() -> None:
    """Run the suite, print the table and the overall ratio, write the JSON results."""
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
    out = Path(__file__).resolve().parent / "results" / "minimize.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {"overall_ratio": overall, "worst_group_ratio": worst, "larger_results": larger, "groups": rows},
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
