"""Generate a corpus of recorded quickstart runs for ``stepfork check`` (issue 17; tests and benchmarks).

Every bundle is a real recording of :func:`quickstart.run_agent`. Most record order ``ORD-1001``, the order
``run_agent`` looks up by default, so ``stepfork check CORPUS --entrypoint quickstart:run_agent`` replays
them as recorded (MATCHED). Every ``diverge_every``-th bundle records order ``ORD-1002`` instead, with no
recorded run input (as a run started some other way would be): replayed through ``run_agent``, which then
gets no argument (docs/replay.md, "Entrypoints and the recorded run input"), the agent asks for another
order than the recording holds, so it DIVERGES at the first tool call, on purpose.

    python corpus.py OUT_DIR COUNT [DIVERGE_EVERY]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import quickstart  # noqa: E402

from stepfork import record  # noqa: E402

MATCHING_ORDER = quickstart.ORDER_ID
DIVERGING_ORDER = "ORD-1002"


def record_one(bundle: Path, order_id: str) -> None:
    """Record one run of ``quickstart.run_agent(order_id)`` into ``bundle``; the run input is recorded
    for the matching order only (see the module docstring)."""
    run_input = {"order_id": order_id} if order_id == MATCHING_ORDER else None
    with record("notify-agent", output=str(bundle), run_input=run_input) as session:
        session.set_output(quickstart.run_agent(order_id))


def make_corpus(out: Path, count: int, *, diverge_every: int = 10, fresh: int = 2) -> dict[str, str]:
    """Write ``count`` bundles under ``out`` (``out/<shard>/run-NNNN.sftrace``, ten shards so a directory
    corpus is searched recursively) and return ``{bundle path: expected verdict}``.

    The first ``fresh`` bundles of each kind are recorded; the rest are copies of them (a recording per
    bundle would make the 1,000-bundle corpus slow to build, and copies replay exactly alike).
    """
    templates: dict[str, list[Path]] = {MATCHING_ORDER: [], DIVERGING_ORDER: []}
    expected: dict[str, str] = {}
    for index in range(count):
        diverging = diverge_every > 0 and index % diverge_every == diverge_every - 1
        order = DIVERGING_ORDER if diverging else MATCHING_ORDER
        bundle = out / f"shard-{index % 10}" / f"run-{index:04d}.sftrace"
        bundle.parent.mkdir(parents=True, exist_ok=True)
        if len(templates[order]) < fresh:
            record_one(bundle, order)
            templates[order].append(bundle)
        else:
            shutil.copytree(templates[order][index % fresh], bundle)
        expected[str(bundle)] = "DIVERGED" if diverging else "MATCHED"
    return expected


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: python corpus.py OUT_DIR COUNT [DIVERGE_EVERY]")
    every = int(sys.argv[3]) if len(sys.argv) == 4 else 10
    made = make_corpus(Path(sys.argv[1]), int(sys.argv[2]), diverge_every=every)
    print(f"{len(made)} bundles, {sum(v == 'DIVERGED' for v in made.values())} diverging")
