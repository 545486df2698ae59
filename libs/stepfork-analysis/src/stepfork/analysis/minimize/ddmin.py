"""Dependency-aware delta debugging over recorded calls (the algorithm only; no replay, no I/O).

Units are integers (the index of a recorded call); ``parents`` maps a unit to the unit it is nested in.
A candidate is always *closed*: every unit comes with its ancestors, so a child call is never kept without
its parent (issue 5, "minimize"); a call and its result are one unit, so they are never split.

Two searches are provided over the same memoized oracle:

- :func:`classic_ddmin`: Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input"
  (IEEE TSE 2002), the ``ddmin`` of figure 5 (subsets, then complements, then finer granularity). It is the
  baseline of benchmarks/bench_minimize.py.
- :func:`dd_prefix`: the search ``minimize`` uses. Failures of agent traces depend on few calls, so it
  finds them one at a time by binary search over prefixes of the remaining candidates (the idea of
  QuickXplain, Junker 2004): given the units already known to be needed ``R`` and the candidates ``C``, the
  smallest ``i`` for which ``R + C[:i]`` still fails makes ``C[i-1]`` needed and everything after it
  unneeded. Cost about ``k * (log2(n) + 1)`` tests for ``k`` needed units of ``n``; a final pass removes any
  unit whose removal alone still fails, so the result is 1-minimal even when the oracle is not monotone.

Both return a :class:`DDResult` whose ``tests`` counts distinct oracle calls (the replays made).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

Oracle = Callable[[Sequence[frozenset[int]]], Sequence[bool]]
"""Takes candidate subsets (closed under parents) and returns, for each, True when it reproduces the
failure. Called with several subsets at once when they can be tested in parallel."""

__all__ = ["DDResult", "MemoOracle", "classic_ddmin", "closure", "dd_prefix", "one_minimal"]


def closure(units: Iterable[int], parents: Mapping[int, int | None]) -> frozenset[int]:
    """Return ``units`` with every ancestor added (following ``parents`` until None)."""
    out: set[int] = set()
    for unit in units:
        node: int | None = unit
        while node is not None and node not in out:
            out.add(node)
            node = parents.get(node)
    return frozenset(out)


@dataclass
class MemoOracle:
    """Wraps an :data:`Oracle`: closes every subset under ``parents`` and answers repeats from a cache.

    Attributes:
        tests: how many distinct subsets were sent to the oracle (the replays made).
    """

    oracle: Oracle
    parents: Mapping[int, int | None] = field(default_factory=dict)
    cache: dict[frozenset[int], bool] = field(default_factory=dict)
    tests: int = 0

    def __call__(self, subsets: Sequence[Iterable[int]]) -> list[bool]:
        """Answer every subset (closed first); unknown ones go to the oracle in one batch."""
        closed = [closure(s, self.parents) for s in subsets]
        todo = list(dict.fromkeys(c for c in closed if c not in self.cache))
        if todo:
            self.tests += len(todo)
            for subset, answer in zip(todo, self.oracle(todo), strict=True):
                self.cache[subset] = bool(answer)
        return [self.cache[c] for c in closed]

    def one(self, subset: Iterable[int]) -> bool:
        """Answer one subset."""
        return self([subset])[0]


@dataclass(frozen=True)
class DDResult:
    """A minimization: the kept units (sorted, closed under parents) and the number of oracle tests."""

    units: tuple[int, ...]
    tests: int
    minimal: bool


def one_minimal(kept: list[int], test: MemoOracle, parents: Mapping[int, int | None]) -> list[int]:
    """Drop units from ``kept`` until removing any single one (with its descendants) no longer fails.

    Takes the unit indexes kept so far, the memoized oracle (True: the subset still fails) and each unit's
    parent; returns the 1-minimal list, in ``kept``'s order. Every trial of a round goes to ``test`` at once.
    """
    changed = True
    while changed:
        changed = False
        trials = [[u for u in kept if u != drop and not _descends(u, drop, parents)] for drop in kept]
        for trial, fails in zip(trials, test(trials), strict=True):
            if fails:
                kept, changed = trial, True
                break
    return kept


def _descends(unit: int, ancestor: int, parents: Mapping[int, int | None]) -> bool:
    node = parents.get(unit)
    while node is not None:
        if node == ancestor:
            return True
        node = parents.get(node)
    return False


def dd_prefix(
    units: Sequence[int],
    oracle: Oracle,
    *,
    parents: Mapping[int, int | None] | None = None,
    workers: int = 1,
) -> DDResult:
    """Minimize ``units`` (in recorded order, parents first) against ``oracle``; see the module doc.

    The full set is assumed to fail (the caller detected the signature on it). With ``workers > 1`` each
    search step tests ``workers`` split points at once (a ``workers+1``-ary search).

    Returns:
        a :class:`DDResult` with the kept units, the number of distinct tests and ``minimal=True``.
    """
    parent_map = dict(parents or {})
    test = oracle if isinstance(oracle, MemoOracle) else MemoOracle(oracle, parent_map)
    test.cache.setdefault(closure(units, parent_map), True)
    required: list[int] = []
    candidates = list(units)
    while candidates:
        # Round 1 assumes the empty set does not fail (the 1-minimality pass checks it when it matters);
        # later rounds first ask whether the units found so far already suffice (one test).
        if required and test.one(required):
            break
        lo, hi = 0, len(candidates)  # test(required + candidates[:hi]) is True; [:lo] assumed/known False
        while hi - lo > 1:
            span = hi - lo
            points = sorted({lo + max(1, span * (j + 1) // (workers + 1)) for j in range(workers)} - {hi})
            answers = test([required + candidates[:p] for p in points])
            new_lo, new_hi = lo, hi
            for p, fails in zip(points, answers, strict=True):
                if fails:
                    new_hi = min(new_hi, p)
                else:
                    new_lo = max(new_lo, p)
            lo, hi = new_lo, min(new_hi, hi)
            if new_lo >= hi:  # non-monotone answers: trust the smallest failing point
                lo = hi - 1
        required.append(candidates[hi - 1])
        candidates = candidates[: hi - 1]
    kept = one_minimal(sorted(closure(required, parent_map)), test, parent_map)
    return DDResult(tuple(sorted(kept)), test.tests, True)


def classic_ddmin(
    units: Sequence[int], oracle: Oracle, *, parents: Mapping[int, int | None] | None = None
) -> DDResult:
    """Zeller and Hildebrandt's ddmin (TSE 2002, figure 5) over ``units``, with the same memoized oracle.

    Returns:
        a :class:`DDResult`; ``minimal`` is True (ddmin's result is 1-minimal by construction).
    """
    parent_map = dict(parents or {})
    test = oracle if isinstance(oracle, MemoOracle) else MemoOracle(oracle, parent_map)
    test.cache.setdefault(closure(units, parent_map), True)
    current = list(units)
    n = 2
    while len(current) >= 2:
        chunks = [current[len(current) * i // n : len(current) * (i + 1) // n] for i in range(n)]
        chunks = [c for c in chunks if c]
        reduced = False
        for chunk in chunks:
            if test.one(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced:
            for i in range(len(chunks)):
                complement = [u for j, c in enumerate(chunks) if j != i for u in c]
                if test.one(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return DDResult(tuple(sorted(closure(current, parent_map))), test.tests, True)
