"""Cold start of the ``stepfork`` command, as ratios to ``python -c pass`` measured in the same run.

Commands (each a fresh process, the real console script beside this interpreter): ``stepfork --version``
(target 1.3x, issue 31), ``stepfork --help`` (4x) and ``stepfork validate`` on the quickstart bundle (4x).
The four commands run interleaved for ``ROUNDS`` rounds; the figure is the median wall time of each (with
``STEPFORK_BENCH_CLOCK=cpu``: the child's CPU time, user + system, which other processes' load does not
inflate), divided by the baseline's median. Results go to benchmarks/results/cli.json; docs/performance.md
("CLI") quotes them.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUNDLE = HERE.parent / "examples" / "quickstart" / "notify.sftrace"
ROUNDS = 21
TARGETS = {"--version": 1.3, "--help": 4.0, "validate": 4.0}  # issue 31: --version 1.3x


def _stepfork() -> str:
    script = Path(sys.executable).parent / "stepfork"
    if not script.exists():
        raise SystemExit("the stepfork console script is not installed beside this interpreter")
    return str(script)


# Wall time by default; STEPFORK_BENCH_CLOCK=cpu times the child's CPU time (user + system) instead, which
# other processes' load does not inflate (a shared machine; docs/performance.md). Baseline and commands alike.
CPU_CLOCK = os.environ.get("STEPFORK_BENCH_CLOCK") == "cpu"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(command: list[str], env: dict[str, str]) -> float:
    started = _children_cpu() if CPU_CLOCK else time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    elapsed = (_children_cpu() if CPU_CLOCK else time.perf_counter()) - started
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}")
    return elapsed


def measure(rounds: int = ROUNDS) -> dict[str, object]:
    """Run the interleaved rounds; return medians (ms), ratios and targets."""
    exe = _stepfork()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    commands = {
        "baseline": [sys.executable, "-c", "pass"],
        "--version": [exe, "--version"],
        "--help": [exe, "--help"],
        "validate": [exe, "validate", str(BUNDLE)],
    }
    for command in commands.values():  # warm the OS file cache and the bytecode caches once
        _time(command, env)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            samples[name].append(_time(command, env))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    base = medians["baseline"]
    rows = {
        name: {
            "median_ms": round(medians[name] * 1000, 1),
            "ratio": round(medians[name] / base, 2),
            "target": TARGETS[name],
            "met": medians[name] / base <= TARGETS[name],
        }
        for name in TARGETS
    }
    return {
        "python": sys.version.split()[0],
        "rounds": rounds,
        "baseline_ms": round(base * 1000, 1),
        "commands": rows,
    }


def main() -> None:
    """Measure, print a table and write benchmarks/results/cli.json."""
    result = measure()
    print(f"python -c pass: {result['baseline_ms']} ms (median of {result['rounds']})")
    print(f"{'command':<12}{'median':>10}{'ratio':>8}{'target':>8}  met")
    for name, row in result["commands"].items():  # type: ignore[union-attr]
        print(f"{name:<12}{row['median_ms']:>8} ms{row['ratio']:>7}x{row['target']:>7}x  {row['met']}")
    out = HERE / "results" / "cli.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
