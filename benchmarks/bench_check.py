"""Check: ``check_corpus`` of a corpus on 2 cores vs a sequential in-process loop over the same bundles, in
one run (issue 17).

The corpora, one per agent (``check`` takes one ``--entrypoint`` per run), each ``CORPUS_SIZE`` bundles
recorded from an examples/ agent, a few diverging on purpose:

- ``quickstart``: examples/quickstart/corpus.py (the trivial agent, ~0.5 ms per replay; every tenth bundle
  diverges: recorded for another order, without its run input).
- ``openai``: examples/openai_agent on the real OpenAI SDK and its fake transport (chat completion with a
  tool call, a tool in a worker thread, a streamed answer, the Responses API).
- ``anthropic``: examples/anthropic_agent on the real Anthropic SDK and its fake transport.

For the SDK agents every ``SDK_DIVERGE_EVERY``-th bundle records another question and no run input, so its
replay (``run_agent()``, the default question) asks the model something else than the recording holds and
DIVERGES at the first request, on purpose. A few bundles of each kind are recorded; the rest are copies
(they replay alike, and recording 1,000 SDK runs would make the benchmark slow to set up).

The baseline is the cheapest correct way to check them without isolation: one process, the entrypoint
imported once and warmed on 20 bundles, ``_check_worker.verdict_of`` (the very code a worker runs) over
every bundle in turn. Against it, in the same run and interleaved for ``ROUNDS`` rounds:

- ``check_corpus(jobs=2)``: batches of bundles, each replayed by a worker forked from the zygote, two
  workers at a time. Figure: throughput (bundles/s) over the loop's; target at least 1.7x on 2 cores.
- ``check_corpus(jobs=1)``: one worker at a time. Figure: per-bundle overhead, (its time per bundle minus
  the loop's) / the loop's time per bundle, i.e. what isolation costs per bundle in units of one in-process
  replay; target at most 2x.
- SDK agents: both with ``warm=True`` (the zygote replays one bundle before forking: the same warmed state
  as the loop's process, the fair comparison) and ``check_corpus(jobs=2)`` cold (the default: each worker's
  first replay builds the SDK's lazy caches).
- quickstart only: ``check_corpus(jobs=2, isolation="bundle")``, a fork per bundle, the isolation before
  batch workers (first round only, it is slow).

Every ``check`` figure includes starting the zygote (a fresh Python importing stepfork and the entrypoint,
plus the warm replay with ``warm=True``), which the warm loop does not pay; the zygote's start alone is
measured too (median of the rounds), and the throughput without it is reported beside.

Every run's verdicts must equal the loop's (and the corpus's expected verdicts), or the benchmark fails.
Median over the rounds. Prints a table per agent and writes benchmarks/results/check.json.
``STEPFORK_BENCH_CHECK_SIZE`` overrides the corpus size, ``STEPFORK_BENCH_CHECK_ROUNDS`` the rounds
(default 3), ``STEPFORK_BENCH_CHECK_AGENTS`` the agents (comma-separated; default all).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
QUICKSTART = EXAMPLES / "quickstart"
CORPUS_SIZE = int(os.environ.get("STEPFORK_BENCH_CHECK_SIZE", "1000"))
ROUNDS = int(os.environ.get("STEPFORK_BENCH_CHECK_ROUNDS", "3"))
SDK_DIVERGE_EVERY = 50  # 20 of 1,000: "a few diverging on purpose"
OTHER_QUESTION = "Is it windy in Oslo?"


class Agent(NamedTuple):
    """One corpus: the example's files copied into the work directory, its entrypoint, and how its corpus
    is made (``make(out, count) -> {bundle: expected verdict}``, called with the work directory on
    ``sys.path``). A NamedTuple, not a dataclass: run_all.py executes this file without registering it in
    ``sys.modules``, which dataclasses need."""

    name: str
    files: tuple[Path, ...]
    entrypoint: str
    make: Callable[[Path, int], dict[str, str]]
    sdk: bool


def _corpus_module() -> Any:
    spec = importlib.util.spec_from_file_location("stepfork_example_corpus", QUICKSTART / "corpus.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _quickstart_corpus(out: Path, count: int) -> dict[str, str]:
    return dict(_corpus_module().make_corpus(out, count))


def _sdk_corpus(module_name: str, agent_name: str) -> Callable[[Path, int], dict[str, str]]:
    """A corpus maker for an SDK example agent (``run_agent(question)``, ``QUESTION``)."""

    def make(out: Path, count: int) -> dict[str, str]:
        from stepfork import record

        agent = importlib.import_module(module_name)  # through the module: tagged values name their class
        templates: dict[bool, Path] = {}
        expected: dict[str, str] = {}
        for index in range(count):
            diverging = index % SDK_DIVERGE_EVERY == SDK_DIVERGE_EVERY - 1
            bundle = out / f"shard-{index % 10}" / f"run-{index:04d}.sftrace"
            bundle.parent.mkdir(parents=True, exist_ok=True)
            if diverging not in templates:
                question = OTHER_QUESTION if diverging else agent.QUESTION
                run_input = None if diverging else agent.QUESTION
                with record(agent_name, output=str(bundle), run_input=run_input) as session:
                    session.set_output(agent.run_agent(question))
                templates[diverging] = bundle
            else:
                shutil.copytree(templates[diverging], bundle)
            expected[str(bundle)] = "DIVERGED" if diverging else "MATCHED"
        return expected

    return make


AGENTS = {
    "quickstart": Agent(
        "quickstart", (QUICKSTART / "quickstart.py",), "quickstart:run_agent", _quickstart_corpus, False
    ),
    "openai": Agent(
        "openai",
        (EXAMPLES / "openai_agent" / "openai_agent.py", EXAMPLES / "openai_agent" / "fake_openai.py"),
        "openai_agent:run_agent",
        _sdk_corpus("openai_agent", "openai-weather-agent"),
        True,
    ),
    "anthropic": Agent(
        "anthropic",
        tuple(EXAMPLES / "anthropic_agent" / f for f in ("anthropic_agent.py", "fake_anthropic.py")),
        "anthropic_agent:run_agent",
        _sdk_corpus("anthropic_agent", "anthropic-weather-agent"),
        True,
    ),
}


def _cpu() -> float:
    """CPU seconds (user + system) of this process and of every child it has reaped (the zygote, which
    reaped its forked replays)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def in_process_loop(entrypoint: str, bundles: list[str], root: str) -> tuple[float, float, dict[str, str]]:
    """Wall and CPU seconds for the sequential in-process loop, and its verdicts."""
    from stepfork.analysis._check_worker import verdict_of

    config = {"entrypoint": entrypoint, "import_root": root, "ordering": "strict", "raise_as": None}
    start, cpu = time.perf_counter(), _cpu()
    verdicts = {b: verdict_of(config, b)["verdict"] for b in bundles}
    return time.perf_counter() - start, _cpu() - cpu, verdicts


def zygote_start(entrypoint: str, root: str, warm_bundle: str | None = None) -> float:
    """Wall seconds from starting a check zygote to its ``ready`` (Python start, stepfork and entrypoint
    imports, and the warm replay of ``warm_bundle`` when given)."""
    from stepfork.analysis._check_runner import CheckRunner

    start = time.perf_counter()
    config = {"entrypoint": entrypoint, "import_root": root, "ordering": "strict", "raise_as": None}
    runner = CheckRunner({**config, "timeout": 60, "warm_bundle": warm_bundle})
    try:
        assert runner._usable_zygote() is not None, "the zygote did not start"
        return time.perf_counter() - start
    finally:
        runner.close()


def checked(
    entrypoint: str, bundles: list[str], root: str, jobs: int, isolation: str = "worker", warm: bool = False
) -> tuple[float, float, dict[str, str]]:
    """Wall and CPU seconds for ``check_corpus`` with ``jobs`` (zygote start included; CPU of the zygote
    and every forked worker included), and its verdicts."""
    from stepfork.analysis import check_corpus

    start, cpu = time.perf_counter(), _cpu()
    result = check_corpus(bundles, entrypoint, jobs=jobs, import_root=root, isolation=isolation, warm=warm)
    elapsed = time.perf_counter() - start
    return elapsed, _cpu() - cpu, {v.bundle: v.verdict for v in result.verdicts}


def measure(agent: Agent, work: Path, count: int, rounds: int) -> dict[str, Any]:
    """Make ``agent``'s corpus of ``count`` bundles under ``work``, measure it for ``rounds`` rounds and
    return its figures (seconds, milliseconds, ratios; see the module docstring)."""
    for file in agent.files:
        shutil.copy2(file, work / file.name)
    root = str(work)
    sys.path.insert(0, root)  # the corpus is recorded, and the loop imports the entrypoint, in this process
    try:
        expected = agent.make(work / "corpus", count)
        bundles = sorted(expected)
        entry = agent.entrypoint
        warm = agent.sdk  # the SDK agents: the fair check starts from the loop's warmed state
        in_process_loop(entry, bundles[:20], root)  # warm the imports and caches round 1 would pay
        samples: dict[str, list[float]] = {}

        def keep(key: str, value: float) -> None:
            samples.setdefault(key, []).append(value)

        load = [os.getloadavg()[0]]
        for round_ in range(rounds):
            seconds, cpu, verdicts = in_process_loop(entry, bundles, root)
            assert verdicts == expected, f"{agent.name}: the in-process loop gave wrong verdicts"
            keep("loop", seconds)
            keep("loop_cpu", cpu)
            keep("start", zygote_start(entry, root, bundles[0] if warm else None))
            runs = [("jobs2", 2, "worker", warm), ("jobs1", 1, "worker", warm)]
            if agent.sdk:
                runs.append(("jobs2_cold", 2, "worker", False))
            elif round_ == 0:  # a fork per bundle is the slow "before" figure: one round of it
                runs.append(("jobs2_fork_per_bundle", 2, "bundle", False))
            for key, jobs, isolation, warm_run in runs:
                seconds, cpu, verdicts = checked(entry, bundles, root, jobs, isolation, warm_run)
                assert verdicts == expected, f"{agent.name}: check_corpus({key}) gave wrong verdicts"
                keep(key, seconds)
                keep(f"{key}_cpu", cpu)
            load.append(os.getloadavg()[0])
    finally:
        sys.path.remove(root)
    med = {key: statistics.median(values) for key, values in samples.items()}
    n = len(bundles)
    loop, two, one, start = med["loop"], med["jobs2"], med["jobs1"], med["start"]
    figures: dict[str, Any] = {
        "bundles": n,
        "diverging": sum(v == "DIVERGED" for v in expected.values()),
        "entrypoint": entry,
        "warm": warm,
        "load_average_1min": [round(x, 2) for x in load],  # other work on the machine, before/after rounds
        "loop_s": round(loop, 3),
        "check_jobs2_s": round(two, 3),
        "check_jobs1_s": round(one, 3),
        "zygote_start_s": round(start, 3),
        "replay_in_process_ms": round(1000 * loop / n, 3),
        "check_jobs1_per_bundle_ms": round(1000 * one / n, 3),
        "throughput_ratio_jobs2": round(loop / two, 2),
        "throughput_ratio_jobs2_without_start": round(loop / max(two - start, 1e-9), 2),
        "overhead_per_bundle_x_replay": round((one - loop) / loop, 2),
        "overhead_per_bundle_x_replay_without_start": round((one - start - loop) / loop, 2),
        # CPU time, which other work on a shared machine disturbs less than wall time: what one bundle
        # costs in the loop and under check (fork, replay in the child, exit, protocol; all processes)
        "cpu_loop_ms_per_bundle": round(1000 * med["loop_cpu"] / n, 3),
        "cpu_check_jobs1_ms_per_bundle": round(1000 * med["jobs1_cpu"] / n, 3),
        "cpu_overhead_per_bundle_x_replay": round((med["jobs1_cpu"] - med["loop_cpu"]) / med["loop_cpu"], 2),
        "cpu_bound_throughput_ratio_2_cores": round(2 * med["loop_cpu"] / med["jobs1_cpu"], 2),
    }
    if "jobs2_cold" in med:
        figures["check_jobs2_cold_s"] = round(med["jobs2_cold"], 3)
        figures["throughput_ratio_jobs2_cold"] = round(loop / med["jobs2_cold"], 2)
    if "jobs2_fork_per_bundle" in med:
        figures["check_jobs2_fork_per_bundle_s"] = round(med["jobs2_fork_per_bundle"], 3)
        figures["throughput_ratio_jobs2_fork_per_bundle"] = round(loop / med["jobs2_fork_per_bundle"], 2)
    return figures


def _row(label: str, seconds: float, text: str) -> None:
    print(f"{label:<40}{seconds:8.2f} s  {text}")


def _print(name: str, f: dict[str, Any]) -> None:
    warm = " warm" if f["warm"] else ""
    head = f"{f['bundles']} bundles ({f['diverging']} diverging)"
    print(f"== {name} ({f['entrypoint']}): {head}, load {f['load_average_1min']}")
    _row("  in-process loop (baseline)", f["loop_s"], f"{f['replay_in_process_ms']:.2f} ms/bundle")
    ratio = f["throughput_ratio_jobs2"]
    _row(f"  check --jobs 2{warm}", f["check_jobs2_s"], f"{ratio:.2f}x the loop's throughput")
    _row(
        "    without the zygote start",
        f["check_jobs2_s"] - f["zygote_start_s"],
        f"{f['throughput_ratio_jobs2_without_start']:.2f}x (zygote start {f['zygote_start_s']:.2f} s)",
    )
    if "check_jobs2_cold_s" in f:
        _row("  check --jobs 2 (cold)", f["check_jobs2_cold_s"], f"{f['throughput_ratio_jobs2_cold']:.2f}x")
    if "check_jobs2_fork_per_bundle_s" in f:
        ratio = f["throughput_ratio_jobs2_fork_per_bundle"]
        _row("  check --jobs 2 --isolation bundle", f["check_jobs2_fork_per_bundle_s"], f"{ratio:.2f}x")
    _row(
        f"  check --jobs 1{warm}",
        f["check_jobs1_s"],
        f"overhead {f['overhead_per_bundle_x_replay']:.2f}x one in-process replay per bundle "
        f"({f['overhead_per_bundle_x_replay_without_start']:.2f}x without the start)",
    )
    print(
        f"{'  CPU per bundle: loop / check --jobs 1':<40}{f['cpu_loop_ms_per_bundle']:.2f} ms / "
        f"{f['cpu_check_jobs1_ms_per_bundle']:.2f} ms (2 idle cores at best: "
        f"{f['cpu_bound_throughput_ratio_2_cores']:.2f}x the loop)"
    )


def main(agents: list[str] | None = None, count: int = CORPUS_SIZE, rounds: int = ROUNDS) -> dict[str, Any]:
    """Run the benchmark for ``agents`` (names of ``AGENTS``; default ``STEPFORK_BENCH_CHECK_AGENTS`` or
    all); print a table per agent; write results/check.json; return ``{agent: figures}`` plus ``cpus``,
    ``rounds`` and ``targets``."""
    chosen = os.environ.get("STEPFORK_BENCH_CHECK_AGENTS", ",".join(AGENTS))
    names = agents or [a for a in chosen.split(",") if a]
    results: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "rounds": rounds,
        "targets": {"throughput_ratio_jobs2": ">= 1.7", "overhead_per_bundle_x_replay": "<= 2.0"},
    }
    for name in names:
        work = Path(tempfile.mkdtemp(prefix=f"stepfork-bench-check-{name}-"))
        try:
            results[name] = measure(AGENTS[name], work, count, rounds)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        _print(name, results[name])
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "check.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
