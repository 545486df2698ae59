"""``stepfork run`` over many exported tests: several files or directories, split across CI machines with
``--shard K/N``, one receipt per test and a summary (issue 17, "Many exported tests").

Each test runs exactly as ``stepfork run TEST`` runs it (:func:`._runner.run_exported_test`:
its own pytest process, its own receipt). Sharding is deterministic: the tests are sorted by path and test
``i`` (0-based) goes to shard ``i % N + 1``, so N machines given the same tree run disjoint sets whose
union is every test, each machine knowing its share without talking to the others.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepfork.analysis._shared.render import html_table
from stepfork.analysis.export._receipt import Receipt
from stepfork.analysis.export._runner import RunInputError, run_exported_test

__all__ = ["RunSummary", "collect_tests", "parse_shard", "run_many", "shard_of"]


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)`` with ``1 <= K <= N``.

    Raises:
        RunInputError: ``invalid_option`` for anything else.
    """
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match is None or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise RunInputError(f"--shard must be K/N with 1 <= K <= N, not {text!r}", code="invalid_option")
    return int(match.group(1)), int(match.group(2))


def collect_tests(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The test files ``paths`` name: files as given, directories searched recursively for ``test_*.py``
    (hidden directories and ``__pycache__`` skipped); sorted by path, duplicates dropped.

    Raises:
        RunInputError: ``test_missing`` when a path does not exist or nothing is found.
    """
    found: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for candidate in path.rglob("test_*.py"):
                parts = candidate.relative_to(path).parts
                if not any(p.startswith(".") or p == "__pycache__" for p in parts):
                    found.add(candidate)
        elif path.is_file():
            found.add(path)
        else:
            raise RunInputError(f"test not found: {path}", code="test_missing")
    if not found:
        raise RunInputError("no test_*.py file found in " + ", ".join(map(str, paths)), code="test_missing")
    return sorted(found, key=lambda p: p.as_posix())


def shard_of(tests: Sequence[Path], shard: int, total: int) -> list[Path]:
    """The tests of shard ``shard`` of ``total`` (1-based): every ``total``-th test of the sorted list,
    starting at ``shard - 1``."""
    ordered = sorted(tests, key=lambda p: p.as_posix())
    return [test for index, test in enumerate(ordered) if index % total == shard - 1]


def _receipt_name(test: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", test.stem)[:80]
    return f"{stem}-{hashlib.sha256(test.as_posix().encode()).hexdigest()[:8]}.json"


@dataclass(frozen=True)
class RunSummary:
    """The receipts of many runs, in test order; ``str()`` the summary, ``to_dict()`` the JSON form.

    Attributes:
        receipts: one per test run; shard: ``(K, N)`` or None; total: tests before sharding;
        receipt_files: where each receipt was written (empty without a receipts directory).
    """

    receipts: tuple[Receipt, ...]
    shard: tuple[int, int] | None = None
    total: int = 0
    receipt_files: tuple[str, ...] = ()

    @property
    def counts(self) -> dict[str, int]:
        """Tests per verdict (passed, failed, could_not_execute), those with none omitted."""
        return dict(Counter(r.verdict for r in self.receipts))

    @property
    def exit_code(self) -> int:
        """0 every test passed (or the shard is empty); 1 a test failed, or some could not execute while
        others ran; 2 none could execute."""
        verdicts = [r.verdict for r in self.receipts]
        if all(v == "passed" for v in verdicts):
            return 0
        if all(v == "could_not_execute" for v in verdicts):
            return 2
        return 1

    def to_dict(self) -> dict[str, Any]:
        """``{shard, total, ran, counts, exit_code, receipts: [receipt JSON], receipt_files}``."""
        return {
            "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None,
            "total": self.total,
            "ran": len(self.receipts),
            "counts": self.counts,
            "exit_code": self.exit_code,
            "receipts": [r.to_dict() for r in self.receipts],
            "receipt_files": list(self.receipt_files),
        }

    def __str__(self) -> str:
        shard = f" (shard {self.shard[0]}/{self.shard[1]} of {self.total})" if self.shard else ""
        lines = [f"Stepfork Run: {len(self.receipts)} test(s){shard}", ""]
        for receipt in self.receipts:
            why = f" ({receipt.reason})" if receipt.reason else ""
            lines.append(f"  {receipt.verdict.upper():<19}{receipt.test}{why}")
        lines += ["", "Verdicts: " + (", ".join(f"{k} {n}" for k, n in self.counts.items()) or "none")]
        plain = sum(r.reason == "not_exported" for r in self.receipts)
        if plain:
            lines.append(
                f"not_exported: {plain} file(s) are not tests `stepfork export` wrote "
                "(no run_regression_case, no TRACE_PATH); there is no Stepfork check in them to run"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [[r.test, r.verdict, r.reason or "", r.detail] for r in self.receipts]
        return html_table(str(self).splitlines()[0], ["Test", "Verdict", "Reason", "Detail"], rows)


def run_many(
    paths: Iterable[str | os.PathLike[str]],
    *,
    shard: tuple[int, int] | None = None,
    receipts_dir: str | os.PathLike[str] | None = None,
    pytest_args: Sequence[str] = (),
    timeout_seconds: float | None = None,
) -> RunSummary:
    """Run every exported test ``paths`` name (or this machine's shard of them), one after another.

    Args:
        paths: test files and directories (see :func:`collect_tests`).
        shard: ``(K, N)``: run only shard K of N (:func:`shard_of`).
        receipts_dir: write each receipt there as ``<test stem>-<8 hex of its path>.json`` (an earlier
            receipt is replaced); every path is checked before any test runs (:func:`_receipt_targets`).
        pytest_args, timeout_seconds: as :func:`run_exported_test`, for each test.

    Raises:
        RunInputError: nothing to run, a bad option (before any test runs), a refused receipt path.
        OSError: a receipt cannot be written.
    """
    tests = collect_tests(paths)
    chosen = shard_of(tests, *shard) if shard else tests
    targets = _receipt_targets(chosen, receipts_dir)
    receipts, files = [], []
    for test, target in zip(chosen, targets, strict=True):
        receipts.append(
            run_exported_test(
                test, receipt_path=target, pytest_args=pytest_args, timeout_seconds=timeout_seconds
            )
        )
        if target is not None:
            files.append(str(target))
    return RunSummary(tuple(receipts), shard, len(tests), tuple(files))


def _receipt_targets(tests: Sequence[Path], receipts_dir: str | os.PathLike[str] | None) -> list[Path | None]:
    """Where each test's receipt goes (None each without ``receipts_dir``), every path checked before any
    test runs, so that a refusal wastes no run: the directory by the one output-target rule
    (:func:`stepfork.trace._outputs.output_target_problem`, ``directory=True``: never a bundle, never a
    file), then each receipt as ``stepfork run --receipt`` checks it (an earlier receipt is replaced).

    Raises:
        RunInputError: ``receipt_refused``, the first refusal's one line.
    """
    from stepfork.analysis.export._receipt import receipt_target_problem
    from stepfork.trace._outputs import output_target_problem

    if receipts_dir is None:
        return [None] * len(tests)
    problem = output_target_problem(receipts_dir, what="the receipts", overwrite=False, directory=True)
    if problem is not None:
        raise RunInputError(problem, code="receipt_refused", path=os.fspath(receipts_dir))
    targets: list[Path | None] = []
    for test in tests:
        target = Path(receipts_dir) / _receipt_name(test)
        problem = receipt_target_problem(target, test=test, bundle=None, overwrite=False)
        if problem is not None:
            raise RunInputError(problem, code="receipt_refused", path=str(target))
        targets.append(target)
    return targets
