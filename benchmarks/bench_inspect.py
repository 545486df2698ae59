"""``stepfork inspect`` on a large bundle (issue 13): wall time and peak memory, as ratios to a baseline.

The bundle: 10,000 dependency calls (5,000 tool calls, 5,000 LLM calls with token usage and cost; 20,002
events, about 28 MB), recorded with ``stepfork.trace.record`` by :func:`make_bundle`. The baseline, measured
in the same run, is ``stepfork validate`` on the same bundle: it reads every event too, streamed. Each
command is a fresh process of the real console script; wall time is the median of ``ROUNDS`` interleaved
rounds, peak memory the child's maximum resident set size (``ru_maxrss`` of the waited child).

Targets: ``inspect`` under 2 s and 100 MB on the issue's machine, which is a ratio to ``validate`` of
``TARGET_TIME_RATIO`` in time and ``TARGET_MEMORY_MB`` in absolute peak memory (resident memory does not
scale with the machine). Results go to benchmarks/results/inspect.json; docs/performance.md ("inspect")
quotes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CALLS = 10_000
ROUNDS = 5
TARGET_TIME_RATIO = 2.0
TARGET_MEMORY_MB = 100.0
PAD = "lorem ipsum dolor sit amet " * 31  # ~650 characters per payload: 28 MB for 20,002 events


def make_bundle(path: Path, calls: int = CALLS) -> Path:
    """Record ``calls`` dependency calls (tools and LLMs alternating, one in 500 tool calls failing) into
    the bundle ``path``; return it."""
    from stepfork.trace import LLMOutput, llm_request, record, trace_tool

    @trace_tool
    def fetch(item: int, note: str) -> dict[str, object]:
        if item % 1000 == 998:
            raise LookupError(f"item {item} not found")
        return {"item": item, "body": note}

    with record("inspect-bench", output=path) as session:
        for index in range(calls):
            if index % 2 == 0:
                with contextlib.suppress(LookupError):
                    fetch(index, PAD)
            else:
                llm_request(
                    model="bench-model",
                    provider="local",
                    input={"messages": [{"role": "user", "content": f"{index} {PAD}"}]},
                    call=lambda index=index: LLMOutput(
                        {"text": f"answer {index} {PAD}"},
                        prompt_tokens=120,
                        completion_tokens=30,
                        total_tokens=150,
                        cost_usd=0.0004,
                    ),
                )
        session.set_output({"done": calls})
    return path


def _stepfork() -> str:
    script = Path(sys.executable).parent / "stepfork"
    if not script.exists():
        raise SystemExit("the stepfork console script is not installed beside this interpreter")
    return str(script)


def run_measured(command: list[str]) -> tuple[float, float, int]:
    """Run ``command`` (stdout to a pipe, read fully); return (seconds, peak RSS in MB, output bytes)."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    size = len(child.stdout.read())
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        raise SystemExit(f"{command} exited {child.returncode}")
    # ru_maxrss is in KiB on Linux, bytes on macOS
    scale = 1 if sys.platform == "darwin" else 1024
    return elapsed, usage.ru_maxrss * scale / 2**20, size


def measure(bundle: Path, rounds: int = ROUNDS) -> dict[str, object]:
    """Interleaved rounds of validate (baseline) and inspect; medians, ratios, targets."""
    exe = _stepfork()
    commands = {
        "baseline": [exe, "validate", str(bundle)],
        "inspect": [exe, "inspect", str(bundle)],
    }
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in commands}
    for command in commands.values():  # warm the file cache once
        run_measured(command)
    for _ in range(rounds):
        for name, command in commands.items():
            samples[name].append(run_measured(command))
    seconds = {name: statistics.median(s[0] for s in values) for name, values in samples.items()}
    memory = {name: max(s[1] for s in values) for name, values in samples.items()}
    ratio = seconds["inspect"] / seconds["baseline"]
    return {
        "python": sys.version.split()[0],
        "rounds": rounds,
        "bundle_mb": round(sum(f.stat().st_size for f in bundle.iterdir()) / 2**20, 1),
        "baseline_s": round(seconds["baseline"], 3),
        "inspect_s": round(seconds["inspect"], 3),
        "time_ratio": round(ratio, 2),
        "baseline_peak_mb": round(memory["baseline"], 1),
        "inspect_peak_mb": round(memory["inspect"], 1),
        "inspect_output_bytes": samples["inspect"][-1][2],
        "targets": {"time_ratio": TARGET_TIME_RATIO, "peak_mb": TARGET_MEMORY_MB},
        "met": ratio <= TARGET_TIME_RATIO and memory["inspect"] <= TARGET_MEMORY_MB,
    }


def main() -> None:
    """Make the bundle in a temporary directory, measure, print, write benchmarks/results/inspect.json."""
    with tempfile.TemporaryDirectory(prefix="bench-inspect-") as tmp:
        bundle = make_bundle(Path(tmp) / "big.sftrace")
        result = measure(bundle)
    print(json.dumps(result, indent=2))
    out = HERE / "results" / "inspect.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
