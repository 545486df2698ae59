"""Issue 12, "Volatile values" in matching: ``ignore={"tool": ["$.requested_at"]}`` on ReplaySession."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from stepfork.replay import ReplayMismatchError, ReplaySession, run_regression_case
from stepfork.trace import record, trace_tool

_clock = itertools.count(1000)


@trace_tool
def search(query: str, requested_at: int, meta: dict[str, Any]) -> list[str]:
    return [query]


def agent(query: str = "shoes") -> list[str]:
    """Puts a clock reading and a random-looking id in the tool input: different on every run."""
    stamp = next(_clock)
    return search(query, stamp, {"trace_id": f"t-{stamp}", "page": 1})


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    path = tmp_path / "clock.sftrace"
    with record("clock", output=path):
        agent()
    return path


def test_without_ignore_the_clock_is_a_divergence(bundle: Path) -> None:
    with pytest.raises(ReplayMismatchError) as info, ReplaySession.from_trace(bundle):
        agent()
    assert info.value.path == "$.meta.trace_id" or info.value.path == "$.requested_at"


def test_ignored_paths_match_and_are_reported(bundle: Path) -> None:
    ignore = {"search": ["$.requested_at", "$.meta.trace_id"]}
    with ReplaySession.from_trace(bundle, ignore=ignore) as session:
        assert agent() == ["shoes"]
    session.verify_complete()
    assert sorted(d.path for d in session.ignored_differences) == ["$.meta.trace_id", "$.requested_at"]
    assert {d.label for d in session.ignored_differences} == {"search"}


def test_a_difference_outside_the_ignored_paths_still_diverges_at_its_own_path(bundle: Path) -> None:
    with (
        pytest.raises(ReplayMismatchError) as info,
        ReplaySession.from_trace(bundle, ignore={"search": ["$.requested_at", "$.meta.*"]}),
    ):
        agent("boots")
    assert info.value.path == "$.query"


def test_wildcards_and_bad_paths(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle, ignore={"search": ["$.requested_at", "$.**"]}) as session:
        agent()
    assert len(session.ignored_differences) == 2
    with pytest.raises(ValueError, match="JSON path"):
        ReplaySession.from_trace(bundle, ignore={"search": ["requested_at"]})


def test_run_regression_case_takes_ignore(bundle: Path) -> None:
    ignore = {"search": ["$.requested_at", "$.meta.trace_id"]}
    assert run_regression_case(agent, bundle, ignore=ignore, has_expectation=False) == ["shoes"]
    with pytest.raises(AssertionError, match=r"divergence|diverged"):
        run_regression_case(agent, bundle, has_expectation=False)
