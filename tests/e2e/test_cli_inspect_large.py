"""``stepfork inspect`` on a large bundle (issue 13): a bounded timeline by default, the bundle streamed.

The timeline shows the first and last rows and the errors between them, with a count of the rest;
``--all`` shows every row; ``--json`` still lists every row. The scan holds one event at a time: its peak
memory (tracemalloc) stays a small fraction of the bundle's size. Wall time is a benchmark
(benchmarks/bench_inspect.py), not a test.
"""

from __future__ import annotations

import contextlib
import json
import re
import tracemalloc
from pathlib import Path

import pytest

from stepfork.trace import LLMOutput, llm_request, record, trace_tool

from .conftest import run_cli

CALLS = 1_500
PAD = "payload " * 120  # ~1 KB per payload


@trace_tool
def fetch(item: int, note: str) -> dict[str, object]:
    if item == 700:
        raise LookupError("item 700 not found")
    return {"item": item, "body": note}


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("inspect") / "big.sftrace"
    with record("big-agent", output=path) as session:
        for index in range(CALLS):
            if index % 2 == 0:
                with contextlib.suppress(LookupError):
                    fetch(index, PAD)
            else:
                llm_request(
                    model="m1",
                    provider="local",
                    input={"prompt": f"{index} {PAD}"},
                    call=lambda: LLMOutput(
                        {"text": PAD}, prompt_tokens=10, completion_tokens=5, cost_usd=0.001
                    ),
                )
        session.set_output({"done": True})
    return path


ROW = re.compile(r"^\s*\d+  (run_start|run_end|tool_call|tool_result|llm_request|llm_response|error)\b")


def timeline_rows(out: str) -> list[str]:
    return [line for line in out.split("Event Timeline", 1)[1].splitlines() if ROW.match(line)]


def test_the_default_timeline_is_bounded_and_keeps_the_errors(big: Path) -> None:
    result = run_cli("inspect", big)
    assert result.code == 0, result.text
    rows = timeline_rows(result.out)
    assert len(rows) <= 10 + 10 + 20
    assert rows[0].split()[:2] == ["0", "run_start"]
    assert rows[-1].split()[1] == "run_end"
    assert any(" error " in row and "LookupError" in row for row in rows)  # an error in the middle
    assert "more events (--all shows every event)" in result.out
    events = int(re.search(r"^Events: +(\d+)$", result.out, re.MULTILINE).group(1))
    assert f"Showing {len(rows)} of {events} events" in result.out


def test_summary_and_rows_show_tokens_cost_and_latency_with_one_label_per_llm_call(big: Path) -> None:
    result = run_cli("inspect", big)
    assert re.search(r"^Tokens: +11250 \(7500 prompt, 3750 completion\)$", result.out, re.MULTILINE)
    assert re.search(r"^LLM cost: +\$0\.7500$", result.out, re.MULTILINE)
    assert re.search(r"^LLM latency: +\d+ ms in all, \d+ ms per call$", result.out, re.MULTILINE)
    llm_rows = [row for row in timeline_rows(result.out) if " llm_" in row]
    assert llm_rows
    assert {row.split()[2] for row in llm_rows} == {"local/m1"}  # request and response: one label
    response = next(row for row in llm_rows if "llm_response" in row)
    assert re.search(r"\d+ ms +15 +\$0\.0010$", response)


def test_all_and_json_show_every_row(big: Path) -> None:
    every = run_cli("inspect", big, "--all")
    assert every.code == 0
    data = json.loads(run_cli("inspect", big, "--json").out)
    assert len(timeline_rows(every.out)) == data["events"] == len(data["timeline"])
    assert "more events" not in every.out
    assert data["tokens"] == {"prompt": 7500, "completion": 3750, "total": 11250}


def test_the_scan_streams_the_bundle(big: Path) -> None:
    from stepfork.analysis.inspection import scan_bundle as inspect_bundle

    size = (big / "events.jsonl").stat().st_size
    tracemalloc.start()
    try:
        found = inspect_bundle(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found.counts.events == 2 * CALLS + 3  # run_start, run_end and one error event
    assert size > 3_000_000
    assert peak < size / 10, f"peak {peak} bytes for a {size}-byte events.jsonl"
