"""Notebook renderings (issue 16): ``_repr_html_`` is the summary and the first rows as escaped HTML with
the full view in a sandboxed iframe a click away; ``_repr_pretty_`` is text; the DataFrame helpers name the
``notebook`` extra when pandas is missing."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest

from stepfork.analysis.diff import diff_traces
from stepfork.replay.outcome import replay_entrypoint
from stepfork.trace.bundle import Trace

from ..conftest import GOLDEN
from ..view_support import calls_trace, hostile_trace

ENTRYPOINTS = Path(__file__).resolve().parents[1] / "e2e" / "entrypoints"


class Printer:
    """The part of IPython's pretty printer that ``_repr_pretty_`` uses."""

    def __init__(self) -> None:
        self.out = ""

    def text(self, value: str) -> None:
        self.out += value


def _pretty(value: object) -> str:
    printer = Printer()
    value._repr_pretty_(printer, False)  # type: ignore[attr-defined]
    return printer.out


def _srcdoc(rendered: str) -> str:
    match = re.search(r'srcdoc="([^"]*)"', rendered)
    assert match is not None
    return html.unescape(match.group(1))


def test_a_trace_renders_its_summary_first_rows_and_full_view() -> None:
    trace = Trace.load(GOLDEN / "successful_run.sftrace")
    rendered = trace._repr_html_()
    assert "golden-success-agent" in rendered
    assert "weather_lookup" in rendered
    assert '<iframe sandbox="allow-scripts"' in rendered
    page = _srcdoc(rendered)
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page
    text = _pretty(trace)
    assert text.splitlines()[0] == "Trace golden-success-agent run_success_001: completed, 6 events"
    assert "weather_lookup" in text


def test_a_hostile_trace_renders_no_markup_into_the_notebook() -> None:
    rendered = hostile_trace()._repr_html_()
    # the only tags are the renderer's own: no script, no image, nothing from the data
    assert "<script" not in rendered
    assert "<img" not in rendered
    assert "<svg" not in rendered
    tags = set(re.findall(r"<([a-zA-Z]+)", rendered))
    assert tags <= {
        "div",
        "table",
        "caption",
        "tbody",
        "thead",
        "tr",
        "th",
        "td",
        "p",
        "details",
        "summary",
        "iframe",
    }


def test_a_large_trace_shows_the_first_rows_and_no_inline_page() -> None:
    rendered = calls_trace(6_000)._repr_html_()
    assert "... 5990 more" in rendered
    assert "<iframe" not in rendered
    assert "... 5990 more" in _pretty(calls_trace(6_000))


def test_a_replay_outcome_renders_its_verdicts_and_the_divergence_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(ENTRYPOINTS))
    outcome = replay_entrypoint(GOLDEN / "successful_run.sftrace", "golden_agents:weather_agent_other_city")
    rendered = outcome._repr_html_()
    assert "DIVERGED" in rendered
    assert "$.messages[0].content" in rendered
    assert '"view":"replay"' in _srcdoc(rendered)
    text = _pretty(outcome)
    assert "Dependency matching: DIVERGED (0 of 2)" in text


def test_a_diff_result_renders_the_table_and_the_side_by_side_view() -> None:
    result = diff_traces(GOLDEN / "diff_baseline.sftrace", GOLDEN / "diff_changed.sftrace")
    rendered = result._repr_html_()
    assert "<table>" in rendered
    assert '"view":"diff"' in _srcdoc(rendered)
    assert _pretty(result) == str(result)


def test_the_dataframes_name_the_extra_when_pandas_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepfork.analysis import events_df, runs_df

    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    trace = Trace.load(GOLDEN / "successful_run.sftrace")
    for call in (lambda: events_df(trace), lambda: runs_df([GOLDEN / "successful_run.sftrace"])):
        with pytest.raises(ImportError, match=re.escape('pip install "stepfork-analysis[notebook]"')):
            call()
