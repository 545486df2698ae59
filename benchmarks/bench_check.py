"""Check: ``check_corpus`` of a corpus on 2 cores vs a sequential in-process loop over the same bundles, in
one run (issue 17).

The corpus: ``CORPUS_SIZE`` recorded quickstart runs (examples/quickstart/corpus.py; every tenth one
diverges on purpose). The baseline is the cheapest correct way to check them without isolation: one
process, the entrypoint imported once, ``_check_worker.verdict_of`` (the very code a forked child runs)
over every bundle in turn. Against it, in the same run and interleaved for ``ROUNDS`` rounds:

- ``check_corpus(jobs=2)``: batches of bundles, each replayed by a worker forked from the zygote, two
  workers at a time. Figure: throughput (bundles/s) over the loop's; target at least 1.7x on 2 cores.
- ``check_corpus(jobs=1)``: one worker at a time. Figure: per-bundle overhead, (its time per bundle minus
  the loop's) / the loop's time per bundle, i.e. what isolation costs per bundle in units of one in-process
  replay; target at most 2x.
- ``check_corpus(jobs=2, isolation="bundle")``: a fork per bundle, the isolation before batch workers
  (the "before" figure, same run; first round only, it is slow).

Both ``check`` figures include starting the zygote (a fresh Python importing stepfork and the entrypoint),
which the warm loop does not pay; the zygote's start alone is measured too (median of the rounds), and
the throughput without it is printed beside (``throughput_ratio_jobs2_without_start``).

Every run's verdicts must equal the loop's, or the benchmark fails. Median over the rounds. Prints a table
and writes benchmarks/results/check.json. ``STEPFORK_BENCH_CHECK_SIZE`` overrides the corpus size,
``STEPFORK_BENCH_CHECK_ROUNDS`` the rounds (default 3).
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUICKSTART = HERE.parent / "examples" / "quickstart"
CORPUS_SIZE = int(os.environ.get("STEPFORK_BENCH_CHECK_SIZE", "1000"))
ROUNDS = int(os.environ.get("STEPFORK_BENCH_CHECK_ROUNDS", "3"))
ENTRYPOINT = "quickstart:run_agent"


def _corpus_module() -> Any:
    spec = importlib.util.spec_from_file_location("stepfork_example_corpus", QUICKSTART / "corpus.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cpu() -> float:
    """CPU seconds (user + system) of this process and of every child it has reaped (the zygote, which
    reaped its forked replays)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def in_process_loop(bundles: list[str], root: str) -> tuple[float, float, dict[str, str]]:
    """Wall and CPU seconds for the sequential in-process loop, and its verdicts."""
    from stepfork.analysis._check_worker import verdict_of

    config = {"entrypoint": ENTRYPOINT, "import_root": root, "ordering": "strict", "raise_as": None}
    start, cpu = time.perf_counter(), _cpu()
    verdicts = {b: verdict_of(config, b)["verdict"] for b in bundles}
    return time.perf_counter() - start, _cpu() - cpu, verdicts


def zygote_start(root: str) -> float:
    """Wall seconds from starting a check zygote to its ``ready`` (Python start, stepfork and entrypoint
    imports)."""
    from stepfork.analysis._check_runner import CheckRunner

    start = time.perf_counter()
    runner = CheckRunner(
        {"entrypoint": ENTRYPOINT, "import_root": root, "ordering": "strict", "raise_as": None, "timeout": 60}
    )
    try:
        assert runner._usable_zygote() is not None, "the zygote did not start"
        return time.perf_counter() - start
    finally:
        runner.close()


def checked(
    bundles: list[str], root: str, jobs: int, isolation: str = "worker"
) -> tuple[float, float, dict[str, str]]:
    """Wall and CPU seconds for ``check_corpus`` with ``jobs`` (zygote start included; CPU of the zygote
    and every forked worker included), and its verdicts."""
    from stepfork.analysis import check_corpus

    start, cpu = time.perf_counter(), _cpu()
    result = check_corpus(bundles, ENTRYPOINT, jobs=jobs, import_root=root, isolation=isolation)
    elapsed = time.perf_counter() - start
    return elapsed, _cpu() - cpu, {v.bundle: v.verdict for v in result.verdicts}


def main() -> dict[str, Any]:
    """Run the benchmark; print the table; write results/check.json; return the figures."""
    work = Path(tempfile.mkdtemp(prefix="stepfork-bench-check-"))
    try:
        shutil.copy2(QUICKSTART / "quickstart.py", work / "quickstart.py")
        expected = _corpus_module().make_corpus(work / "corpus", CORPUS_SIZE)
        bundles = sorted(expected)
        root = str(work)
        sys.path.insert(0, root)  # the loop imports the entrypoint in this process
        in_process_loop(bundles[:20], root)  # warm the imports the loop would otherwise pay in round 1
        loop_s, two_s, one_s, per_bundle_s, start_s, loop_cpu, one_cpu = [], [], [], [], [], [], []
        for _ in range(ROUNDS):
            seconds, cpu, verdicts = in_process_loop(bundles, root)
            assert verdicts == expected, "the in-process loop gave wrong verdicts"
            loop_s.append(seconds)
            loop_cpu.append(cpu)
            start_s.append(zygote_start(root))
            runs = [(2, "worker", two_s), (1, "worker", one_s)]
            if not per_bundle_s:  # a fork per bundle is the slow "before" figure: one round of it
                runs.append((2, "bundle", per_bundle_s))
            for jobs, isolation, sink in runs:
                seconds, cpu, verdicts = checked(bundles, root, jobs, isolation)
                assert verdicts == expected, f"check_corpus(jobs={jobs}, {isolation}) gave wrong verdicts"
                sink.append(seconds)
                if jobs == 1:
                    one_cpu.append(cpu)
        loop, two, one, per_bundle, zygote = (
            statistics.median(s) for s in (loop_s, two_s, one_s, per_bundle_s, start_s)
        )
        cpu_loop, cpu_check = statistics.median(loop_cpu), statistics.median(one_cpu)
        n = len(bundles)
        replay_ms = 1000 * loop / n
        figures = {
            "bundles": n,
            "cpus": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2),  # other work on the machine, at the end
            "rounds": ROUNDS,
            "loop_s": round(loop, 3),
            "check_jobs2_s": round(two, 3),
            "check_jobs1_s": round(one, 3),
            "check_jobs2_fork_per_bundle_s": round(per_bundle, 3),
            "zygote_start_s": round(zygote, 3),
            "replay_in_process_ms": round(replay_ms, 3),
            "check_jobs1_per_bundle_ms": round(1000 * one / n, 3),
            "throughput_ratio_jobs2": round(loop / two, 2),
            "throughput_ratio_jobs2_without_start": round(loop / max(two - zygote, 1e-9), 2),
            "throughput_ratio_jobs2_fork_per_bundle": round(loop / per_bundle, 2),
            "overhead_per_bundle_x_replay": round((one / n - loop / n) / (loop / n), 2),
            # CPU time, which other work on a shared machine disturbs less than wall time: what one bundle
            # costs in the loop and under check (fork, replay in the child, exit, protocol; all processes)
            "cpu_loop_ms_per_bundle": round(1000 * cpu_loop / n, 3),
            "cpu_check_ms_per_bundle": round(1000 * cpu_check / n, 3),
            "cpu_overhead_per_bundle_x_replay": round((cpu_check - cpu_loop) / cpu_loop, 2),
            "cpu_bound_throughput_ratio_2_cores": round(2 * cpu_loop / cpu_check, 2),
            "targets": {"throughput_ratio_jobs2": ">= 1.7", "overhead_per_bundle_x_replay": "<= 2.0"},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'corpus':<38}{n} bundles ({sum(v == 'DIVERGED' for v in expected.values())} diverging)")
    print(f"{'in-process loop (baseline)':<38}{loop:8.2f} s  {replay_ms:7.2f} ms/bundle")
    print(
        f"{'check --jobs 2':<38}{two:8.2f} s  {figures['throughput_ratio_jobs2']:.2f}x the loop's throughput"
    )
    print(
        f"{'  without the zygote start':<38}{two - zygote:8.2f} s  "
        f"{figures['throughput_ratio_jobs2_without_start']:.2f}x (zygote start {zygote:.2f} s)"
    )
    print(
        f"{'check --jobs 2 --isolation bundle':<38}{per_bundle:8.2f} s  "
        f"{figures['throughput_ratio_jobs2_fork_per_bundle']:.2f}x (a fork per bundle)"
    )
    print(
        f"{'check --jobs 1':<38}{one:8.2f} s  overhead {figures['overhead_per_bundle_x_replay']:.2f}x "
        "one in-process replay per bundle"
    )
    print(
        f"{'CPU per bundle: loop / check':<38}{figures['cpu_loop_ms_per_bundle']:.2f} ms / "
        f"{figures['cpu_check_ms_per_bundle']:.2f} ms (2 idle cores at best: "
        f"{figures['cpu_bound_throughput_ratio_2_cores']:.2f}x the loop)"
    )
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "check.json").write_text(json.dumps(figures, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main()
