"""Per-call overhead of the HTTP capture transport, recording and replay (issue 11, "Benchmark").

Baseline, measured in the same run: the same OpenAI SDK call (``chat.completions.create``, plain and
``stream=True``) on an uninstrumented client whose transport is a fake provider (``httpx2.MockTransport``
serving a realistic ~2 KB completion or a 20-chunk SSE stream), with no Stepfork session. Measured:

- ``record``: the call on an ``instrument_openai`` client inside ``stepfork.trace.record`` (the fake still
  answers; the request, the response and its events are written to the bundle);
- ``replay``: the same calls replayed by a frozen ``ReplaySession`` (the fake is never called: the
  capture serves the recorded response and the SDK builds its objects from it).

Ratios = per-call time / baseline per-call time; targets: record <= 1.3x, replay <= 1.0x. Timings are the
best of several repeats, interleaved. Run: ``hatch run bench:all capture`` or ``python
benchmarks/bench_capture.py``; JSON goes to benchmarks/results/capture.json. Needs the openai SDK.
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "capture.json"
CALLS = 200
REPEATS = 9
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
    from stepfork.integrations.openai import instrument_openai
    from stepfork.replay import ReplaySession
    from stepfork.trace import record

    def serve(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if body.get("stream"):
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=_stream(body["model"])
            )
        return httpx2.Response(200, json=_completion(body["model"]))

    def client(instrumented: bool) -> openai.OpenAI:
        http = httpx2.Client(transport=httpx2.MockTransport(serve))
        c = openai.OpenAI(api_key="sk-bench", http_client=http, max_retries=0)
        return instrument_openai(c) if instrumented else c

    def plain(c: openai.OpenAI) -> Any:
        return c.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, temperature=0)

    def streamed(c: openai.OpenAI) -> Any:
        return list(c.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True))

    def per_call(run: Callable[[], None]) -> float:
        start = time.perf_counter()
        run()
        return (time.perf_counter() - start) / CALLS

    def measure(call: Callable[[openai.OpenAI], Any], folder: Path) -> dict[str, float]:
        """Best per-call seconds of the baseline, recording and replay of ``call``, interleaved."""
        bundle = folder / "recorded.sftrace"
        with record("bench", output=bundle):
            c = client(True)
            for _ in range(CALLS):
                call(c)
        best = {"baseline": float("inf"), "record": float("inf"), "replay": float("inf")}
        for repeat in range(REPEATS):
            base_client, rec_client = client(False), client(True)

            def baseline() -> None:
                for _ in range(CALLS):
                    call(base_client)  # noqa: B023 - runs before the next iteration rebinds it

            def recording() -> None:
                with record("bench", output=folder / f"r{repeat}.sftrace"):  # noqa: B023
                    for _ in range(CALLS):
                        call(rec_client)  # noqa: B023

            def replaying() -> None:
                with ReplaySession.from_trace(bundle):
                    for _ in range(CALLS):
                        call(rec_client)  # noqa: B023

            best["baseline"] = min(best["baseline"], per_call(baseline))
            best["record"] = min(best["record"], per_call(recording))
            best["replay"] = min(best["replay"], per_call(replaying))
        return best

    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, call in (("plain", plain), ("stream", streamed)):
            folder = Path(tmp) / name
            folder.mkdir()
            best = measure(call, folder)
            rows[name] = {
                "baseline_us": best["baseline"] * 1e6,
                "record_us": best["record"] * 1e6,
                "replay_us": best["replay"] * 1e6,
                "record_ratio": best["record"] / best["baseline"],
                "replay_ratio": best["replay"] / best["baseline"],
            }
    print(f"{'call':<8}{'baseline':>12}{'record':>12}{'replay':>12}{'record x':>10}{'replay x':>10}")
    for name, row in rows.items():
        print(
            f"{name:<8}{row['baseline_us']:>10.0f}us{row['record_us']:>10.0f}us{row['replay_us']:>10.0f}us"
            f"{row['record_ratio']:>9.2f}x{row['replay_ratio']:>9.2f}x"
        )
    print("targets: record <= 1.3x, replay <= 1.0x the un-instrumented call on the fake transport")
    RESULTS.parent.mkdir(exist_ok=True)
    meta = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "calls": CALLS,
        "repeats": REPEATS,
    }
    RESULTS.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
