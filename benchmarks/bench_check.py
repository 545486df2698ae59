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

The baseline is the cheapest correct way to check them without isolation, a sequential loop: one fresh
Python process that imports stepfork and the entrypoint once, resolves the entrypoint once (as each of
``check``'s workers does) and calls ``_check_worker.verdict_of`` (the very code a worker runs) on every
bundle in turn, twice. Against it, in the same run and interleaved for
``ROUNDS`` rounds:

- **Throughput, steady state** (the target: at least 1.7x on 2 cores): ``check_corpus(jobs=2)`` with its
  zygote already started (the entrypoint imported and one bundle replayed: ``warm``)
  against the loop's second pass (imported and warmed alike). Throughput is a rate, bundles per second
  once running; the one-time start of either side is not part of it (docs/decisions.md). Batches of
  bundles, each replayed by a worker forked from the zygote, two workers at a time: forks, protocol and the
  parent's work are all in the time.
- **What two plain processes get on this machine**: two fresh loop processes at once, each over half the
  corpus, released together for their second pass (no isolation, no protocol, no parent process). On a VM
  whose two vCPUs are not two free cores this is well under 2x; the throughput of ``--jobs 2`` is also given
  as a share of it (``check``'s workers can beat it: their zygote's heap is frozen out of the collector).
- **Per-bundle overhead** (target at most 2x one in-process replay): ``check_corpus(jobs=1)``, zygote
  started, one worker at a time: (its time per bundle minus the loop's) / the loop's time per bundle.
- **End to end, both starting cold**: ``check_corpus(jobs=2)`` including the zygote's start against the
  loop's process from its start to the end of its first pass (Python start, imports, every replay): what
  ``stepfork check`` costs against a sequential script. The zygote's start alone is measured too, and the
  ratio against the warm loop (the figure this benchmark reported before) is kept beside.
- One round of each other setting: without ``warm`` (each worker's first replay builds the SDK's lazy
  caches, the default), the quickstart agent with ``isolation="bundle"`` (a fork per bundle, the isolation
  before batch workers).

Every run's verdicts must equal the loop's (and the corpus's expected verdicts), or the benchmark fails.
Median over the rounds; the throughput figures are the median of each round's own ratio, ``--jobs 2``
timed right after the loop (this VM's speed drifts by 10-15% from one minute to the next, which a ratio of
two medians taken minutes apart would carry), with the lowest and highest round beside it. Prints a table
per agent and writes benchmarks/results/check.json.
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
import subprocess
import sys
import tempfile
import threading
import time
import uuid
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


ORDERING = "auto"  # check_corpus's default; the loop uses the same


def _cpu() -> float:
    """CPU seconds (user + system) of this process and of every child it has reaped (the zygote, which
    reaped its forked replays)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _reaped() -> None:
    """Wait until every check zygote this process closed has been reaped: ``check_corpus`` returns once its
    zygote has stopped answering and a thread reaps it (``_zygote.client.ZygoteClient.close``); only then is
    its CPU, and that of the workers it reaped, in ``RUSAGE_CHILDREN``."""
    from stepfork.analysis._zygote.client import REAPER_THREAD

    for thread in threading.enumerate():
        if thread.name == REAPER_THREAD:
            thread.join()


LOOP = """
import json, sys, time
first = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from stepfork.analysis.check._worker import resolve_targets, verdict_of
config = {"entrypoint": sys.argv[2], "import_root": sys.argv[1], "ordering": sys.argv[3], "raise_as": None}
bundles = json.loads(open(sys.argv[4]).read())
targets = resolve_targets(config)  # once, as check's workers do
cold = {b: verdict_of(config, b, targets)["verdict"] for b in bundles}
if len(sys.argv) > 5:  # one of two loops at once: both start their second pass together
    print("ready", flush=True)
    sys.stdin.readline()
second, cpu = time.perf_counter(), time.process_time()
warm = {b: verdict_of(config, b, targets)["verdict"] for b in bundles}
end = time.perf_counter()
print(json.dumps({"cold": cold, "warm": warm, "second_s": end - second,
                  "second_cpu_s": time.process_time() - cpu, "inside_s": end - first}))
"""


class Loop(NamedTuple):
    """The sequential loop's figures (seconds) and verdicts: ``cold_s``, a fresh process from its start to
    the end of its first pass over the bundles (Python start, imports, every replay: a sequential script
    end to end); ``warm_s`` / ``warm_cpu_s``, its second pass over the same bundles (the steady state)."""

    cold_s: float
    warm_s: float
    warm_cpu_s: float
    cold_verdicts: dict[str, str]
    warm_verdicts: dict[str, str]


def _process_cpu(pid: int) -> float:
    """CPU seconds process ``pid`` has used so far, with its reaped children (Linux ``/proc``; 0.0
    elsewhere, where the steady-state CPU figures then include the zygote's start)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def sequential_loop(entrypoint: str, bundles: list[str], root: str) -> Loop:
    """The baseline: one fresh Python process that imports stepfork and the entrypoint once and calls
    ``_check_worker.verdict_of`` (the very function a worker runs, no isolation) on every bundle in turn,
    twice. A process of its own, like a user's script, rather than this one (whose heap holds the corpus
    recording: a garbage collection here costs more than in a fresh process)."""
    listing = Path(root) / "bundles.json"
    listing.write_text(json.dumps(bundles))
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", LOOP, root, entrypoint, ORDERING, str(listing)],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    elapsed = time.perf_counter() - start
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    cold = elapsed - out["second_s"]
    return Loop(cold, out["second_s"], out["second_cpu_s"], out["cold"], out["warm"])


def two_loops_at_once(entrypoint: str, bundles: list[str], root: str) -> float:
    """What two cores give two plain Python processes here: two fresh loop processes (as
    :func:`sequential_loop`), each over one half of the bundles, released together for their second pass;
    returns the wall seconds until both ended it (each times its own pass from the release). No isolation,
    no protocol, no parent. A VM whose two vCPUs share a physical core, or a host busy elsewhere, gives
    much less than 2x. Not a strict bound for ``check``: its workers start from a zygote whose heap is
    frozen out of the garbage collector (``gc.freeze``), so their collections are cheaper than a loop's."""
    halves = [bundles[: len(bundles) // 2], bundles[len(bundles) // 2 :]]
    procs = []
    for index, half in enumerate(halves):
        listing = Path(root) / f"half-{index}.json"
        listing.write_text(json.dumps(half))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", LOOP, root, entrypoint, ORDERING, str(listing), "barrier"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=root,
            )
        )
    for proc in procs:  # each has imported and run its first pass
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", "a loop process did not start"
    start = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outs = [proc.communicate()[0] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), "a loop process failed"
    assert time.perf_counter() > start
    # each process times its own second pass from the release: the later end is when both were done (the
    # processes' exit, an SDK's interpreter teardown, is not part of it)
    return max(json.loads(out.strip().splitlines()[-1])["second_s"] for out in outs)


def zygote_start(entrypoint: str, root: str, warm_bundle: str | None = None) -> tuple[float, float]:
    """Wall and CPU seconds from starting a check zygote to its ``ready`` (Python start, stepfork and
    entrypoint imports, and the warm replay of ``warm_bundle`` when given)."""
    from stepfork.analysis.check import task_config
    from stepfork.analysis.check._runner import CheckRunner

    start, cpu = time.perf_counter(), _cpu()
    runner = CheckRunner(task_config(entrypoint, import_root=root, warm_bundle=warm_bundle))
    try:
        assert runner._usable_zygote() is not None, "the zygote did not start"
        elapsed = time.perf_counter() - start
    finally:
        runner.close()
    _reaped()  # its CPU is counted in RUSAGE_CHILDREN from here
    return elapsed, _cpu() - cpu


def checked(
    entrypoint: str,
    bundles: list[str],
    root: str,
    jobs: int,
    isolation: str = "worker",
    warm: bool = False,
    started: bool = False,
) -> tuple[float, float, dict[str, str]]:
    """Wall and CPU seconds for ``check_corpus`` with ``jobs`` (CPU of the zygote and every forked worker
    included), and its verdicts. ``started``: the zygote is started and ready before the clock starts (the
    steady state: the replays, forks, protocol and parent, without the one-time start); else the time
    includes the zygote's start, as a ``stepfork check`` run does."""
    from unittest import mock

    from stepfork.analysis import check_corpus
    from stepfork.analysis.check import task_config
    from stepfork.analysis.check._runner import _runner

    # check_corpus keys its zygote by a fresh uuid per run (its own zygote, closed at its end): the
    # benchmark fixes that uuid so that the zygote it starts before the clock is the one the run uses
    run = uuid.UUID(int=1)
    cpu = _cpu()
    if started:  # the runner for this exact configuration, which check_corpus then uses
        config = task_config(
            entrypoint,
            import_root=root,
            warm_bundle=bundles[0] if warm else None,
            isolation=isolation,
            workers=jobs,  # check_corpus's own pool gives its zygote a cap of `jobs` workers
        )
        config["run"] = run.hex
        zygote = _runner(config)._usable_zygote()
        assert zygote is not None, "the zygote did not start"
        cpu += _process_cpu(zygote._proc.pid)  # its start is not part of the steady state
    options: dict[str, Any] = {"jobs": jobs, "import_root": root, "isolation": isolation, "warm": warm}
    start = time.perf_counter()
    with mock.patch.object(uuid, "uuid4", return_value=run):
        result = check_corpus(bundles, entrypoint, **options)
    elapsed = time.perf_counter() - start
    if started:  # the run closes the zygote it used: this one, or the figure included another's start
        assert zygote._broken, "check_corpus did not use the zygote started for it"
    _reaped()
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
        warm = True  # the steady state: every worker starts from a zygote warmed as the loop's second pass
        samples: dict[str, list[float]] = {}

        def keep(key: str, value: float) -> None:
            samples.setdefault(key, []).append(value)

        load = [os.getloadavg()[0]]
        for round_ in range(rounds):
            loop = sequential_loop(entry, bundles, root)
            assert loop.cold_verdicts == expected, f"{agent.name}: the loop gave wrong verdicts"
            assert loop.warm_verdicts == expected, f"{agent.name}: the loop gave wrong verdicts"
            keep("loop", loop.warm_s)
            keep("loop_cpu", loop.warm_cpu_s)
            keep("cold_loop", loop.cold_s)
            # --jobs 2 right after the loop: this VM's speed drifts by 10-15% from one minute to the next,
            # so each round's own ratio (the two measured back to back) is the figure, not medians of each
            seconds, cpu, verdicts = checked(entry, bundles, root, 2, "worker", warm, True)
            assert verdicts == expected, f"{agent.name}: check_corpus(jobs2) gave wrong verdicts"
            keep("jobs2", seconds)
            keep("jobs2_cpu", cpu)
            keep("throughput_round", loop.warm_s / seconds)
            two = two_loops_at_once(entry, bundles, root)
            keep("two_loops", two)
            keep("two_loops_round", loop.warm_s / two)
            keep("of_two_loops_round", two / seconds)
            seconds, cpu = zygote_start(entry, root, bundles[0] if warm else None)
            keep("start", seconds)
            keep("start_cpu", cpu)
            runs = [
                ("jobs1", 1, "worker", warm, True),
                ("jobs2_cold_start", 2, "worker", warm, False),
            ]
            if round_ == 0:  # figures of other settings: one round of each
                runs.append(("jobs2_unwarmed", 2, "worker", False, False))
                if not agent.sdk:  # a fork per bundle: the slow isolation of before
                    runs.append(("jobs2_fork_per_bundle", 2, "bundle", False, False))
            for key, jobs, isolation, warm_run, started in runs:
                seconds, cpu, verdicts = checked(entry, bundles, root, jobs, isolation, warm_run, started)
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
        "cold_loop_s": round(med["cold_loop"], 3),
        "zygote_start_s": round(start, 3),
        "check_jobs2_s": round(two, 3),
        "check_jobs1_s": round(one, 3),
        "check_jobs2_with_start_s": round(med["jobs2_cold_start"], 3),
        "replay_in_process_ms": round(1000 * loop / n, 3),
        "check_jobs1_per_bundle_ms": round(1000 * one / n, 3),
        # the targets: steady state on both sides (the loop's imports and the zygote's start excluded);
        # throughput: the median of each round's ratio (loop and check measured back to back), its range
        "throughput_ratio_jobs2": round(med["throughput_round"], 2),
        "throughput_ratio_jobs2_range": [
            round(min(samples["throughput_round"]), 2),
            round(max(samples["throughput_round"]), 2),
        ],
        "throughput_ratio_of_medians": round(loop / two, 2),
        "overhead_per_bundle_x_replay": round((one - loop) / loop, 2),
        # end to end, both starting cold: a fresh process running the loop against `stepfork check`
        "end_to_end_ratio_jobs2": round(med["cold_loop"] / med["jobs2_cold_start"], 2),
        # the earlier figure: check with its start against the warm loop without its imports
        "ratio_jobs2_with_start_vs_warm_loop": round(loop / med["jobs2_cold_start"], 2),
        # CPU time, which other work on a shared machine disturbs less than wall time: what one bundle
        # costs in the loop and under check (forks, replays, protocol; all processes; start excluded)
        "cpu_loop_ms_per_bundle": round(1000 * med["loop_cpu"] / n, 3),
        "cpu_check_jobs1_ms_per_bundle": round(1000 * med["jobs1_cpu"] / n, 3),
        "cpu_overhead_per_bundle_x_replay": round((med["jobs1_cpu"] - med["loop_cpu"]) / med["loop_cpu"], 2),
        "cpu_bound_throughput_ratio_2_cores": round(2 * med["loop_cpu"] / med["jobs1_cpu"], 2),
        # what two plain processes get here: two loops at once, each over half the corpus, no isolation
        "two_loops_s": round(med["two_loops"], 3),
        "two_loops_throughput_ratio": round(med["two_loops_round"], 2),
        "throughput_of_two_loops": round(med["of_two_loops_round"], 2),
    }
    if "jobs2_unwarmed" in med:
        figures["check_jobs2_unwarmed_s"] = round(med["jobs2_unwarmed"], 3)
        figures["end_to_end_ratio_jobs2_unwarmed"] = round(med["cold_loop"] / med["jobs2_unwarmed"], 2)
    if "jobs2_fork_per_bundle" in med:
        figures["check_jobs2_fork_per_bundle_s"] = round(med["jobs2_fork_per_bundle"], 3)
        figures["end_to_end_ratio_jobs2_fork_per_bundle"] = round(
            med["cold_loop"] / med["jobs2_fork_per_bundle"], 2
        )
    return figures


def _row(label: str, seconds: float, text: str) -> None:
    print(f"{label:<44}{seconds:8.2f} s  {text}")


def _print(name: str, f: dict[str, Any]) -> None:
    warm = " warm" if f["warm"] else ""
    head = f"{f['bundles']} bundles ({f['diverging']} diverging)"
    print(f"== {name} ({f['entrypoint']}): {head}, load {f['load_average_1min']}")
    print("  steady state (the loop's imports and the zygote's start excluded):")
    _row("    in-process loop (baseline)", f["loop_s"], f"{f['replay_in_process_ms']:.2f} ms/bundle")
    ratio, (low, high) = f["throughput_ratio_jobs2"], f["throughput_ratio_jobs2_range"]
    text = f"{ratio:.2f}x the loop's throughput (rounds {low:.2f}-{high:.2f}; target >= 1.7x)"
    _row(f"    check --jobs 2{warm}", f["check_jobs2_s"], text)
    text = f"{f['two_loops_throughput_ratio']:.2f}x: what 2 plain processes get on this machine"
    _row("    two loops at once, half the corpus each", f["two_loops_s"], text)
    print(f"{'    check --jobs 2 / two loops at once':<44}{f['throughput_of_two_loops']:.2f}")
    _row(
        f"    check --jobs 1{warm}",
        f["check_jobs1_s"],
        f"overhead {f['overhead_per_bundle_x_replay']:.2f}x one in-process replay per bundle (target <= 2x)",
    )
    print(
        f"{'    CPU per bundle: loop / check --jobs 1':<44}{f['cpu_loop_ms_per_bundle']:.2f} ms / "
        f"{f['cpu_check_jobs1_ms_per_bundle']:.2f} ms (2 idle cores at best: "
        f"{f['cpu_bound_throughput_ratio_2_cores']:.2f}x the loop)"
    )
    print(f"  end to end, both starting cold (zygote start {f['zygote_start_s']:.2f} s):")
    _row("    the loop as a fresh process", f["cold_loop_s"], "")
    _row(
        f"    check --jobs 2{warm}",
        f["check_jobs2_with_start_s"],
        f"{f['end_to_end_ratio_jobs2']:.2f}x ({f['ratio_jobs2_with_start_vs_warm_loop']:.2f}x the warm loop)",
    )
    if "check_jobs2_unwarmed_s" in f:
        ratio = f["end_to_end_ratio_jobs2_unwarmed"]
        _row("    check --jobs 2 (not warmed)", f["check_jobs2_unwarmed_s"], f"{ratio:.2f}x")
    if "check_jobs2_fork_per_bundle_s" in f:
        ratio = f["end_to_end_ratio_jobs2_fork_per_bundle"]
        _row("    check --jobs 2 --isolation bundle", f["check_jobs2_fork_per_bundle_s"], f"{ratio:.2f}x")


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
