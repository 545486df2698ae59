"""Generate a corpus of recorded quickstart runs for ``stepfork check`` (issue 17; tests and benchmarks).

Every bundle is a real recording of :func:`quickstart.run_agent`. Most record order ``ORD-1001``, the order
``run_agent`` looks up by default, so ``stepfork check CORPUS --entrypoint quickstart:run_agent`` replays
them as recorded (MATCHED). Every ``diverge_every``-th bundle records order ``ORD-1002`` instead, with no
recorded run input (as a run started some other way would be): replayed through ``run_agent``, which then
gets no argument (docs/replay.md, "Entrypoints and the recorded run input"), the agent asks for another
order than the recording holds, so it DIVERGES at the first tool call, on purpose.

    python corpus.py OUT_DIR COUNT [DIVERGE_EVERY] [--overwrite]

``OUT_DIR`` must be new or empty; ``--overwrite`` replaces the bundles an earlier run wrote there (its
``shard-N/run-NNNN.sftrace``; nothing else in it is touched). Bad input is one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

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


class _UsageError(Exception):
    """The command line is wrong; the message is the one line to print."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _positive(text: str) -> int:
    """``text`` as an int of at least 1 (argparse's ``type``: a ValueError becomes one usage line)."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


_positive.__name__ = "positive integer"  # argparse's message: "invalid positive integer value: 'abc'"

_SHARD = re.compile(r"shard-[0-9]")
_BUNDLE = re.compile(r"run-[0-9]{4,}\.sftrace")


def _foreign(out: Path) -> list[Path]:
    """What ``out`` holds besides the bundles an earlier ``corpus.py`` wrote (shard-N/run-NNNN.sftrace)."""
    found = []
    for entry in sorted(out.iterdir()):
        if entry.is_dir() and _SHARD.fullmatch(entry.name):
            found += [b for b in sorted(entry.iterdir()) if not (b.is_dir() and _BUNDLE.fullmatch(b.name))]
        else:
            found.append(entry)
    return found


def main(argv: Sequence[str]) -> int:
    """``corpus.py OUT_DIR COUNT [DIVERGE_EVERY] [--overwrite]``: write the corpus, print how many bundles
    diverge; return 0, or 2 after one line on stderr for bad input: COUNT or DIVERGE_EVERY not a positive
    integer, OUT_DIR a file, OUT_DIR holding an earlier corpus without ``--overwrite`` (which replaces it),
    or OUT_DIR holding anything else (never deleted: choose a new or empty directory)."""
    parser = _Parser(prog="corpus.py", description="Record a corpus of quickstart runs for stepfork check.")
    parser.add_argument("out", metavar="OUT_DIR", type=Path)
    parser.add_argument("count", metavar="COUNT", type=_positive)
    parser.add_argument("diverge_every", metavar="DIVERGE_EVERY", type=_positive, nargs="?", default=10)
    parser.add_argument("--overwrite", action="store_true", help="replace the corpus an earlier run wrote")
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        usage = "python corpus.py OUT_DIR COUNT [DIVERGE_EVERY] [--overwrite]"
        print(f"corpus.py: {exc} (usage: {usage})", file=sys.stderr)
        return 2
    out: Path = args.out
    if out.exists() and not out.is_dir():
        print(f"corpus.py: {out} is a file; OUT_DIR must be a new or empty directory", file=sys.stderr)
        return 2
    if out.is_dir() and any(out.iterdir()):
        foreign = _foreign(out)
        if foreign:
            why = f"{foreign[0]}, not written by corpus.py; choose a new or empty OUT_DIR"
            print(f"corpus.py: {out} holds {why}", file=sys.stderr)
            return 2
        if not args.overwrite:
            print(f"corpus.py: {out} already holds a corpus; pass --overwrite to replace it", file=sys.stderr)
            return 2
        for shard in out.iterdir():
            shutil.rmtree(shard)
    made = make_corpus(out, args.count, diverge_every=args.diverge_every)
    print(f"{len(made)} bundles, {sum(v == 'DIVERGED' for v in made.values())} diverging")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
