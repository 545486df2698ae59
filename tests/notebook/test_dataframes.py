"""``events_df`` and ``runs_df`` (issue 16; docs/view.md "Notebooks"): the documented columns and dtypes,
durations in ms, tokens and cost, redaction, one row per event / per run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from stepfork.analysis import events_df, runs_df
from stepfork.analysis.view.dataframes import EVENT_COLUMNS, RUN_COLUMNS
from stepfork.trace.bundle import Trace
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.models import RunStart, ToolCall

from ..conftest import GOLDEN
from ..view_support import T0, calls_trace


def test_events_df_has_one_row_per_event_with_the_documented_columns(tmp_path: Path) -> None:
    bundle = calls_trace(70).save(tmp_path / "calls.sftrace")  # one failing tool call
    trace = Trace.load(bundle)
    frame = events_df(trace)
    assert tuple(frame.columns) == EVENT_COLUMNS
    assert len(frame) == len(trace.events)
    assert list(frame["step"]) == list(range(len(trace.events)))
    assert str(frame["timestamp"].dtype).endswith(", UTC]")
    assert frame["duration_ms"].dtype == "Int64"
    assert frame["cost_usd"].dtype == "Float64"
    llm = frame[frame["type"] == "llm_response"]
    assert llm["total_tokens"].sum() == 15 * len(llm)
    assert llm["prompt_tokens"].sum() == 10 * len(llm)
    assert llm["cost_usd"].sum() == pytest.approx(0.001 * len(llm))
    assert set(frame["kind"]) == {"run", "llm", "tool", "error"}
    results = frame[frame["type"] == "tool_result"]
    assert set(results["duration_ms"]) == {2}
    # offset_ms: milliseconds since the run was created (the builder ticks 1 ms, then 0.1 ms per tool call)
    assert frame.loc[0, "offset_ms"] == pytest.approx(1.0)
    assert frame.loc[2, "offset_ms"] == pytest.approx(2.1)
    errors = frame[frame["kind"] == "error"]
    assert list(errors["name"]) == ["TimeoutError"]
    assert errors.iloc[0]["output"]["message"] == "lookup 1 timed out"
    # a path works as well as a Trace
    assert events_df(bundle).equals(frame)


def test_events_df_redacts_payloads() -> None:
    trace = Trace(run_id="run_s", agent_name="a", created_at=T0)
    start = trace.add(RunStart(id="s0", run_id="r", timestamp=T0, input={}))
    trace.add(
        ToolCall(
            id="s1", run_id="r", parent_id=start.id, timestamp=T0, name="pay", input={"api_key": "k-123"}
        )
    )
    frame = events_df(trace)
    assert frame.loc[1, "input"] == {"api_key": "[REDACTED]"}


def test_runs_df_has_one_row_per_run(tmp_path: Path) -> None:
    paths = [
        GOLDEN / "successful_run.sftrace",
        GOLDEN / "failed_tool_run.sftrace",
        GOLDEN / "legacy_v01.sftrace",
    ]
    frame = runs_df(paths)
    assert tuple(frame.columns) == RUN_COLUMNS
    assert list(frame["path"]) == [str(p) for p in paths]
    assert list(frame["status"]) == ["completed", "failed", "running"]
    assert list(frame["integrity"]) == ["verified", "verified", "unverified_legacy"]
    first = frame.iloc[0]
    assert first["events"] == 6
    assert first["tool_calls"] == 1
    assert first["llm_calls"] == 1
    assert first["duration_ms"] == 5000
    assert frame.loc[1, "errors"] >= 1
    assert isinstance(first["created_at"], pd.Timestamp)
    assert str(first["created_at"].tz) == "UTC"
    assert frame["events"].dtype == "Int64"

    broken = Path(shutil.copytree(GOLDEN / "successful_run.sftrace", tmp_path / "broken.sftrace"))
    (broken / "manifest.json").write_text("{")
    with pytest.raises(TraceStorageError):
        runs_df([broken])
