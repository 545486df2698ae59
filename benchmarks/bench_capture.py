"""Per-call overhead of the HTTP capture transport, recording and replay (issue 11, "Benchmark").

Baseline, measured in the same run: the same OpenAI SDK call (``chat.completions.create``, plain and
``stream=True``) on an uninstrumented client whose transport is a fake provider (``httpx2.MockTransport``
serving a realistic ~2 KB completion or a 20-chunk SSE stream), with no Stepfork session. Measured:

- ``record``: the call on an ``instrument_openai`` client inside ``stepfork.trace.record`` (the fake still
  answers; the request, the response and its events are written to the bundle);
- ``replay``: the same calls replayed by a frozen ``ReplaySession`` (the fake is never called: the
  capture serves the recorded response and the SDK builds its objects from it).

Per-call cost: only the calls are timed; opening and finishing the session (bundle creation, fsync,
integrity; ``Trace.load``) are per-session costs, timed apart and reported as ``session_ms``.

Noise (the machine is shared): in each round the three measures alternate in blocks of ``BLOCK`` calls
(each session open in its own ``contextvars`` context, so a recording and a replay can be open at once),
in the order of ``SCHEDULE``, until each made ``CALLS`` calls; one warm-up round is not counted. The order
has every measure follow each other measure equally often: a block runs on the caches the block before it
left, and recording, which writes, leaves them colder than the others do (a plain rotation had replay
follow recording twice as often as the baseline did). Time is the
process's CPU time (``time.process_time``: time spent waiting for a core while other processes run is
not counted; wall time is reported beside it). The ratio of a round is record (or replay) over the
baseline of the *same* round, and the figure is the **median of the per-round ratios** over ``ROUNDS``
rounds (the lowest and highest round ratio beside it). Targets: record <= 1.3x, replay <=
1.0x. Run: ``hatch run bench:all capture`` or ``python benchmarks/bench_capture.py``;
``STEPFORK_BENCH_CAPTURE_ROUNDS`` / ``STEPFORK_BENCH_CAPTURE_CALLS`` change the size; JSON goes to
benchmarks/results/capture.json. Needs the openai SDK.
"""

from __future__ import annotations

import contextvars
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "capture.json"
CALLS = int(os.environ.get("STEPFORK_BENCH_CAPTURE_CALLS", "100"))
ROUNDS = int(os.environ.get("STEPFORK_BENCH_CAPTURE_ROUNDS", "15"))
BLOCK = 5  # calls of one measure in a row before the next measure runs
SCHEDULE = ("baseline", "record", "replay", "baseline", "replay", "record")
"""The order of the blocks, repeated: each measure runs twice and follows each other measure once."""
MESSAGES = [
    {"role": "system", "content": "You are a concise weather assistant. " * 8},
    {"role": "user", "content": "Should I take an umbrella in Paris today? " * 4},
]


def _completion(model: str) -> dict[str, Any]:
    text = "It is 21 degrees and sunny in Paris, no umbrella needed today. " * 20
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1767225600,
        "model": model,
        "system_fingerprint": "fp_4f0b692a78",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 280, "total_tokens": 400},
    }


def _stream(model: str) -> bytes:
    base = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1767225600, "model": model}
    lines = [
        "data: "
        + json.dumps(
            {**base, "choices": [{"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}]}
        )
        + "\n\n"
        for i in range(20)
    ]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def main() -> None:
    try:
        import httpx2
        import openai
    except ImportError:
        print("bench_capture: the openai SDK is not installed in this environment; skipped")
        return
    rows = measure_all(httpx2, openai, calls=CALLS, rounds=ROUNDS)
    print(
        f"{'call':<8}{'baseline':>11}{'record':>11}{'replay':>11}{'record x':>21}{'replay x':>21}"
        f"{'wall: record x':>16}{'replay x':>10}"
    )
    for name, row in rows.items():
        print(
            f"{name:<8}{row['baseline_us']:>9.0f}us{row['record_us']:>9.0f}us{row['replay_us']:>9.0f}us"
            f"{row['record_ratio']:>8.2f}x ({row['record_ratio_min']:.2f}-{row['record_ratio_max']:.2f})"
            f"{row['replay_ratio']:>8.2f}x ({row['replay_ratio_min']:.2f}-{row['replay_ratio_max']:.2f})"
            f"{row['record_wall_ratio']:>15.2f}x{row['replay_wall_ratio']:>9.2f}x"
        )
    for name, row in rows.items():
        print(
            f"{name}: opening and closing a session of {CALLS} calls (not in the per-call figures): "
            f"record {row['record_session_ms']:.1f} ms, replay {row['replay_session_ms']:.1f} ms"
        )
    print(
        f"CPU time per call, median of {ROUNDS} rounds of {CALLS} calls interleaved in blocks of {BLOCK} "
        "(range of the round ratios in brackets); "
        "targets: record <= 1.3x, replay <= 1.0x the un-instrumented call on the fake transport"
    )
    RESULTS.parent.mkdir(exist_ok=True)
    meta = {
        "python": sys.version_info[:3],
        "machine": platform.machine(),
        "openai": openai.__version__,
        "calls": CALLS,
        "rounds": ROUNDS,
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    RESULTS.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


def measure_all(httpx2: Any, openai: Any, *, calls: int, rounds: int) -> dict[str, dict[str, float]]:
    """``{"plain": row, "stream": row}``: per-call µs (medians), median round ratios and their ranges."""
    from stepfork.integrations.openai import instrument_openai
    from stepfork.replay import ReplaySession
    from stepfork.trace import record

    def serve(request: Any) -> Any:
        body = json.loads(request.content)
        if body.get("stream"):
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=_stream(body["model"])
            )
        return httpx2.Response(200, json=_completion(body["model"]))

    def client(instrumented: bool) -> Any:
        http = httpx2.Client(transport=httpx2.MockTransport(serve))
        c = openai.OpenAI(api_key="sk-bench", http_client=http, max_retries=0)
        return instrument_openai(c) if instrumented else c

    def plain(c: Any) -> Any:
        return c.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, temperature=0)

    def streamed(c: Any) -> Any:
        return list(c.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True))

    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, call in (("plain", plain), ("stream", streamed)):
            folder = Path(tmp) / name
            folder.mkdir()
            rows[name] = _measure(call, folder, client, record, ReplaySession, calls=calls, rounds=rounds)
    return rows


def _measure(
    call: Callable[[Any], Any],
    folder: Path,
    client: Callable[[bool], Any],
    record: Any,
    replay_session: Any,
    *,
    calls: int,
    rounds: int,
) -> dict[str, float]:
    """Per-call cost of baseline, recording and replay of ``call``, interleaved (module docstring)."""
    base_client, rec_client = client(False), client(True)
    bundle = folder / "recorded.sftrace"
    with record("bench", output=bundle):
        for _ in range(calls):
            call(rec_client)
    clients = {"baseline": base_client, "record": rec_client, "replay": rec_client}
    cpu: dict[str, list[float]] = {k: [] for k in clients}
    wall: dict[str, list[float]] = {k: [] for k in clients}
    session_s: dict[str, list[float]] = {"record": [], "replay": []}
    for round_ in range(rounds + 1):  # round 0 warms every path up and is not counted
        # Each session lives in its own context (ContextVar state), so calls of the three measures can
        # alternate in blocks of BLOCK: a load spike from another process then hits all three alike.
        contexts = {"baseline": contextvars.copy_context()}
        sessions = {
            "record": record("bench", output=folder / f"r{round_ % 2}.sftrace", overwrite=True),
            "replay": replay_session.from_trace(bundle),
        }
        for name, session in sessions.items():
            contexts[name] = contextvars.copy_context()
            opened = time.perf_counter()
            contexts[name].run(session.__enter__)
            session_s[name].append(time.perf_counter() - opened)
        spent_cpu = dict.fromkeys(clients, 0.0)
        spent_wall = dict.fromkeys(clients, 0.0)
        gc.collect()
        made = dict.fromkeys(clients, 0)
        for name in SCHEDULE * -(-calls // BLOCK):
            n = min(BLOCK, calls - made[name])
            if n <= 0:
                continue
            made[name] += n
            ctx, c = contexts[name], clients[name]
            w, t = time.perf_counter(), time.process_time()
            for _ in range(n):
                ctx.run(call, c)
            spent_cpu[name] += time.process_time() - t
            spent_wall[name] += time.perf_counter() - w
        for name, session in sessions.items():
            closed = time.perf_counter()
            contexts[name].run(session.__exit__, None, None, None)
            session_s[name][-1] += time.perf_counter() - closed
        if round_ == 0:
            for lists in (session_s,):
                for values in lists.values():
                    values.clear()
            continue
        for name in clients:
            cpu[name].append(spent_cpu[name] / calls)
            wall[name].append(spent_wall[name] / calls)
    row: dict[str, float] = {f"{k}_us": statistics.median(v) * 1e6 for k, v in cpu.items()}
    row.update({f"{k}_wall_us": statistics.median(v) * 1e6 for k, v in wall.items()})
    for name in ("record", "replay"):
        ratios = [m / b for m, b in zip(cpu[name], cpu["baseline"], strict=True)]
        row[f"{name}_ratio"] = statistics.median(ratios)
        row[f"{name}_ratio_min"] = min(ratios)
        row[f"{name}_ratio_max"] = max(ratios)
        walls = [m / b for m, b in zip(wall[name], wall["baseline"], strict=True)]
        row[f"{name}_wall_ratio"] = statistics.median(walls)
        row[f"{name}_session_ms"] = statistics.median(session_s[name]) * 1e3
    return row


if __name__ == "__main__":
    main()
