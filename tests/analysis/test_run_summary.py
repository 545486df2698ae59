"""``SummaryBuilder``: the one run summary (``stepfork inspect``, the HTML view, ``runs_df``), counted one
event at a time: LLM usage with what was recorded told apart from zero, and the duration."""

from __future__ import annotations

from pathlib import Path

from stepfork.analysis.inspection import SummaryBuilder
from stepfork.trace import LLMOutput, llm_request, record, trace_tool
from stepfork.trace.reading import open_bundle


@trace_tool
def lookup(key: str) -> str:
    return key.upper()


def _summary(path: Path) -> SummaryBuilder:
    with open_bundle(path) as opened:
        summary = SummaryBuilder(opened.manifest)
        for event in opened.events():
            summary.add(event)
    return summary


def test_llm_usage_latency_and_what_was_recorded(tmp_path: Path) -> None:
    with record("agent", output=tmp_path / "a.sftrace") as session:
        lookup("x")
        llm_request(model="m", provider="p", input={"q": 1}, call=lambda: LLMOutput({}, prompt_tokens=3))
        llm_request(model="m", provider="p", input={"q": 2}, call=lambda: LLMOutput({}, cost_usd=0.25))
        session.set_output("done")
    summary = _summary(tmp_path / "a.sftrace")
    assert (summary.tool_calls, summary.llm_calls, summary.llm_responses, summary.errors) == (1, 2, 2, 0)
    assert summary.tokens_recorded
    assert (summary.prompt_tokens, summary.completion_tokens, summary.total_tokens) == (3, 0, 3)
    assert summary.cost_usd == 0.25
    assert isinstance(summary.llm_latency_ms, int)  # the recorder measures each LLM call
    result = summary.result()
    assert result["llm_latency_ms"] == summary.llm_latency_ms
    assert result["duration_ms"] == summary.duration_ms() is not None


def test_nothing_recorded_is_none_not_zero(tmp_path: Path) -> None:
    with record("agent", output=tmp_path / "b.sftrace") as session:
        lookup("x")
        session.set_output("done")
    summary = _summary(tmp_path / "b.sftrace")
    assert not summary.tokens_recorded
    assert (summary.cost_usd, summary.llm_latency_ms) == (None, None)
