"""``diff`` of two 10,000-call bundles (issue 28): the noise rules' cost, as a ratio to ``--strict``.

The bundles: two recordings of the same agent, 10,000 dependency calls each (5,000 LLM calls shaped as the
HTTP capture writes them, 5,000 tool calls), recorded with ``stepfork.trace.record`` by :func:`make_bundle`.
Every LLM response is new, as from a live provider: a fresh completion id, ``created``, fingerprint,
tool-call id, ``x-request-id`` and ``date``; each next request echoes the previous tool-call id. So the
default diff has every rule to apply (headers, body paths, timing, one renaming across all steps) and
says EQUIVALENT, while ``--strict`` (rules off, no renaming) reports every difference.

Measured in the same run, in this process, on the two loaded traces (loading is the same for both and is
left out): the median of ``ROUNDS`` interleaved rounds of ``diff_traces(a, b)`` and ``diff_traces(a, b,
strict=True)``. Target: the default at most ``TARGET_RATIO`` times ``--strict``. Results go to
benchmarks/results/diff.json; docs/performance.md ("diff") quotes them.
"""

from __future__ import annotations

import json
import random
import statistics
import string
import sys
import tempfile
import time
from email.utils import formatdate
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CALLS = 10_000
ROUNDS = 3
TARGET_RATIO = 2.0
PAD = "lorem ipsum dolor sit amet " * 8


def _rid(rng: random.Random, prefix: str, size: int) -> str:
    return prefix + "".join(rng.choices(string.ascii_letters + string.digits, k=size))


def make_bundle(path: Path, calls: int = CALLS, seed: int = 0) -> Path:
    """Record ``calls`` dependency calls (LLM and tool alternating) into the bundle ``path``; ``seed``
    draws the provider's fresh values (two seeds: two live recordings of the same code)."""
    from stepfork.trace import LLMOutput, llm_request, record, trace_tool

    rng = random.Random(seed)

    @trace_tool
    def fetch(item: int) -> dict[str, object]:
        return {"item": item, "body": PAD}

    with record("diff-bench", output=path) as session:
        previous: str | None = None
        for index in range(calls // 2):
            messages: list[dict[str, Any]] = [{"role": "user", "content": f"{index} {PAD}"}]
            if previous is not None:
                messages += [
                    {"role": "assistant", "tool_calls": [{"id": previous, "type": "function"}]},
                    {"role": "tool", "tool_call_id": previous, "content": "done"},
                ]
            call_id = _rid(rng, "call_", 24)
            body = {
                "id": _rid(rng, "chatcmpl-", 29),
                "object": "chat.completion",
                "created": 1767225600 + rng.randrange(10_000),
                "model": "gpt-bench",
                "system_fingerprint": _rid(rng, "fp_", 10),
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": call_id,
                                    "type": "function",
                                    "function": {"name": "fetch", "arguments": json.dumps({"item": index})},
                                }
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
            }
            headers = {
                "content-type": "application/json",
                "x-request-id": _rid(rng, "req_", 32),
                "openai-processing-ms": str(rng.randrange(100, 900)),
                "date": formatdate(1767225600 + rng.randrange(10_000), usegmt=True),
            }
            output = {"status": 200, "headers": headers, "json": body}
            request = {
                "method": "POST",
                "path": "/v1/chat/completions",
                "headers": {},
                "body": {"messages": messages},
            }
            llm_request(
                model="gpt-bench",
                provider="openai",
                input=request,
                call=lambda output=output: LLMOutput(output, prompt_tokens=120, completion_tokens=30),
            )
            fetch(index)
            previous = call_id
        session.set_output({"done": calls, "last_call": previous})
    return path


def measure(a: Path, b: Path, rounds: int = ROUNDS) -> dict[str, object]:
    """Interleaved rounds of the default diff and ``--strict`` on the loaded bundles; medians, ratio."""
    from stepfork.analysis import diff_traces
    from stepfork.trace import load_trace

    base, cand = load_trace(a), load_trace(b)
    samples: dict[str, list[float]] = {"strict": [], "default": []}
    verdicts: dict[str, bool] = {}
    for _ in range(rounds):
        for name, strict in (("strict", True), ("default", False)):
            started = time.perf_counter()
            result = diff_traces(base, cand, strict=strict)
            samples[name].append(time.perf_counter() - started)
            verdicts[name] = result.equivalent
    seconds = {name: statistics.median(values) for name, values in samples.items()}
    ratio = seconds["default"] / seconds["strict"]
    return {
        "python": sys.version.split()[0],
        "calls": len([e for e in base.events if str(getattr(e.type, "value", e.type)).endswith("_call")])
        + len([e for e in base.events if str(getattr(e.type, "value", e.type)) == "llm_request"]),
        "rounds": rounds,
        "strict_s": round(seconds["strict"], 3),
        "default_s": round(seconds["default"], 3),
        "ratio": round(ratio, 2),
        "default_equivalent": verdicts["default"],
        "strict_equivalent": verdicts["strict"],
        "target_ratio": TARGET_RATIO,
        "met": ratio <= TARGET_RATIO and verdicts["default"] and not verdicts["strict"],
    }


def main(calls: int = CALLS, rounds: int = ROUNDS) -> dict[str, object]:
    """Make both bundles in a temporary directory, measure, print, write benchmarks/results/diff.json."""
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        a = make_bundle(Path(tmp) / "a.sftrace", calls, seed=1)
        b = make_bundle(Path(tmp) / "b.sftrace", calls, seed=2)
        result = measure(a, b, rounds)
    print(json.dumps(result, indent=2))
    if calls == CALLS:
        out = HERE / "results" / "diff.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
