"""Load: many concurrent calls recorded completely and replayed without inventing a value; large bundles
validated with integrity in bounded memory (issue 7 part 5; CASES.md C6, C10).

The tools are pure functions of their input (``answer(task, j)``), so any value replay serves can be checked
against the input it was served for.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from rel_support import child_env, limit_memory, record_figure, run_cli_batch, scale

from stepfork.replay import ReplayError, ReplaySession
from stepfork.trace import load_trace, record, trace_tool, validate_bundle

TASKS, TASK_CALLS = 100, 100
THREADS, THREAD_CALLS = 16, 500


def answer(task: int, j: int) -> dict[str, Any]:
    return {"task": task, "j": j, "sum": task * 1000 + j}


@trace_tool
async def aload(task: int, j: int) -> dict[str, Any]:
    return answer(task, j)


@trace_tool
def tload(task: int, j: int) -> dict[str, Any]:
    return answer(task, j)


async def _async_agent(results: dict[tuple[int, int], Any]) -> None:
    async def worker(task: int) -> None:
        for j in range(TASK_CALLS):
            results[(task, j)] = await aload(task, j)
            await asyncio.sleep(0)  # round-robin the tasks, the same way when recording and replaying

    await asyncio.gather(*(worker(t) for t in range(TASKS)))


def _thread_agent(results: dict[tuple[int, int], Any], errors: list[BaseException]) -> None:
    def worker(task: int) -> None:
        for j in range(THREAD_CALLS):
            try:
                results[(task, j)] = tload(task, j)
            except ReplayError as exc:
                errors.append(exc)

    threads = [
        threading.Thread(target=contextvars.copy_context().run, args=(worker, t)) for t in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _assert_complete(bundle: Path, name: str, tasks: int, calls: int) -> None:
    """Strictly valid with integrity, and every call has exactly one call and one result event."""
    result = validate_bundle(bundle, strict=True, verify_integrity=True)
    assert result.valid, [(i.code, i.message) for i in result.issues[:5]]
    events = load_trace(bundle).events
    inputs = Counter((e.input["task"], e.input["j"]) for e in events if e.type == "tool_call")
    outputs = Counter((e.output["task"], e.output["j"]) for e in events if e.type == "tool_result")
    expected = Counter({(t, j): 1 for t in range(tasks) for j in range(calls)})
    assert inputs == expected
    assert outputs == expected
    assert all(getattr(e, "name", name) == name for e in events if e.type in ("tool_call", "tool_result"))


def test_100_asyncio_tasks_of_100_calls_are_recorded_whole_and_replay_frozen_to_the_same_values(
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "tasks.sftrace"
    recorded: dict[tuple[int, int], Any] = {}
    with record("load-async", output=bundle):
        asyncio.run(_async_agent(recorded))
    _assert_complete(bundle, "aload", TASKS, TASK_CALLS)

    replayed: dict[tuple[int, int], Any] = {}
    with ReplaySession.from_trace(bundle, "frozen") as session:
        asyncio.run(_async_agent(replayed))
    session.verify_complete()
    assert replayed == recorded == {(t, j): answer(t, j) for t in range(TASKS) for j in range(TASK_CALLS)}
    record_figure("load", agent="asyncio", calls=len(replayed), replayed_matched=len(session.matched))


@pytest.fixture(scope="module")
def thread_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[int, int], Any]]:
    """16 threads x 500 calls recorded once: the bundle and the values the calls returned."""
    bundle = tmp_path_factory.mktemp("threads") / "threads.sftrace"
    recorded: dict[tuple[int, int], Any] = {}
    errors: list[BaseException] = []
    with record("load-threads", output=bundle):
        _thread_agent(recorded, errors)
    assert not errors
    return bundle, recorded


def test_16_threads_of_500_calls_are_recorded_whole_and_replay_never_serves_another_calls_value(
    thread_run: tuple[Path, dict[tuple[int, int], Any]],
) -> None:
    bundle, _ = thread_run
    _assert_complete(bundle, "tload", THREADS, THREAD_CALLS)

    # The strict cursor serves calls in the recorded order (docs/replay.md "Limits"): free-running threads
    # either reach it in that order or get a clear ReplayError; a served value is never another call's.
    replayed: dict[tuple[int, int], Any] = {}
    errors: list[BaseException] = []
    with ReplaySession.from_trace(bundle, "frozen"):
        _thread_agent(replayed, errors)
    wrong = {key: value for key, value in replayed.items() if value != answer(*key)}
    assert not wrong
    assert len(replayed) + len(errors) == THREADS * THREAD_CALLS
    assert all(getattr(e, "code", None) for e in errors)
    record_figure(
        "load", agent="threads", calls=THREADS * THREAD_CALLS, served=len(replayed), refused=len(errors)
    )


def test_16_threads_of_500_calls_replay_completely_with_unordered_ordering(
    thread_run: tuple[Path, dict[tuple[int, int], Any]],
) -> None:
    # free-running threads record short calls one after the other (no overlap), so `concurrent` keeps
    # them sequential; `unordered` matches any sibling by identity (docs/replay.md, "Orderings")
    bundle, recorded = thread_run
    replayed: dict[tuple[int, int], Any] = {}
    errors: list[BaseException] = []
    with ReplaySession.from_trace(bundle, "frozen", ordering="unordered") as session:
        _thread_agent(replayed, errors)
    record_figure("load", agent="threads-unordered-ordering", served=len(replayed), refused=len(errors))
    assert not errors, errors[:3]
    session.verify_complete()
    assert replayed == recorded


_BIG_WRITER = """
import sys
from stepfork.trace import record, trace_tool

@trace_tool
def chunk(i: int, size: int) -> str:
    return ("abcdefghij" * (size // 10 + 1))[:size]

out, calls, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with record("load-big", output=out):
    for i in range(calls):
        chunk(i, size)
"""

_MEASURE = """
import json, resource, sys, time, tracemalloc
from stepfork.trace import validate_bundle, verify_bundle_integrity

def peak_rss_kib():  # VmHWM: ru_maxrss would include the forking parent's RSS (see cli_driver.py)
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

path = sys.argv[1]
base = peak_rss_kib()
tracemalloc.start()
started = time.perf_counter()
integrity = verify_bundle_integrity(path)
integrity_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.reset_peak()
result = validate_bundle(path, strict=True, verify_integrity=True)
validate_peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({
    "valid": result.valid, "verified": integrity.verified, "codes": result.codes,
    "integrity_peak": integrity_peak, "validate_peak": validate_peak,
    "rss_growth_kib": peak_rss_kib() - base,
    "seconds": time.perf_counter() - started,
}))
"""


def _write_big(tmp_path: Path, name: str, calls: int, size: int) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    subprocess.run(
        [sys.executable, "-c", _BIG_WRITER, str(bundle), str(calls), str(size)],
        env=child_env(),
        check=True,
        timeout=600,
    )
    return bundle


def _measure(bundle: Path, memory_mb: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(bundle)],
        env=child_env(),
        capture_output=True,
        timeout=600,
        preexec_fn=limit_memory(memory_mb),
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return json.loads(done.stdout)


# Streaming validation (validate_bundle reads events.jsonl line by line and keeps a slim record per event):
# memory follows the largest line and the number of events, not the payload bytes (C10).
LINE_FACTOR = 24  # reading and hashing one line allocates about 18x it at the peak, nearly all orjson's
# worst-case output buffer for a long string (tests/trace/test_validation_memory.py); measured 14x for 5 MB
RSS_LINE_FACTOR = 8  # most of that buffer is never touched: measured 3.5x the line in RSS
EVENT_BYTES = 1024  # kept per event (slim record, check indexes); measured 480 traced
CAP_MB = 1024  # address-space cap of each child, whatever the bundle size


@pytest.mark.parametrize(
    ("name", "calls", "size"),
    [
        ("events", 50_000 - 1, 16),  # run_start + 2 x 49,999 + run_end = 100,000 events
        ("megabytes", scale(10, 20), 5 * 1024 * 1024),  # 50 MB in CI, 100 MB in soak mode
    ],
)
def test_a_large_bundle_validates_with_integrity_in_bounded_memory(
    tmp_path: Path, name: str, calls: int, size: int
) -> None:
    bundle = _write_big(tmp_path, name, calls, size)
    total = sum(p.stat().st_size for p in bundle.iterdir())
    with (bundle / "events.jsonl").open("rb") as handle:
        line_sizes = [len(line) for line in handle]
    events, line = len(line_sizes), max(line_sizes)
    figures = _measure(bundle, memory_mb=CAP_MB)  # enforced: MemoryError = fail
    assert figures["valid"], figures["codes"]
    assert figures["verified"]
    # integrity is streamed: its peak does not grow with the bundle
    assert figures["integrity_peak"] < 4 * 2**20
    # validation is streamed: before, it held the parsed trace, 6.6x the bundle for 100,000 small events
    # (275 MB traced, 439 MB RSS growth), 4.3x for 5 MB payloads (213 MB traced for 50 MB); these refuse it
    assert figures["validate_peak"] < LINE_FACTOR * line + EVENT_BYTES * events + 16 * 2**20
    rss_allowance = RSS_LINE_FACTOR * line + EVENT_BYTES * events  # RSS growth includes tracemalloc's own
    assert figures["rss_growth_kib"] * 1024 < rss_allowance + 64 * 2**20
    outcomes, cli_rss_kib = run_cli_batch(
        [["validate", "--verify-integrity", bundle.name]], cwd=tmp_path, memory_mb=CAP_MB
    )
    assert outcomes[0].code == 0, outcomes[0].text[-500:]
    assert cli_rss_kib * 1024 < rss_allowance + 128 * 2**20  # + the interpreter and the CLI's imports
    record_figure(
        "load-big",
        cli_validate_rss_mb=cli_rss_kib // 1024,
        name=name,
        events=events,
        largest_line_mb=round(line / 2**20, 2),
        bundle_mb=round(total / 2**20, 1),
        integrity_peak_mb=round(figures["integrity_peak"] / 2**20, 2),
        validate_peak_mb=round(figures["validate_peak"] / 2**20, 1),
        rss_growth_mb=round(figures["rss_growth_kib"] / 1024, 1),
        seconds=round(figures["seconds"], 1),
    )
