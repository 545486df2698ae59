"""Replay's output comparison continues the renaming its input matching made (NEWCOMER5 F2).

A fresh value the agent sent as ``x`` in the recording and as ``x'`` in the replay must come back as ``x'``
in the output: an agent that returns a brand-new id instead of the key it sent, or swaps the two refs it
sent, is DIVERGED in replay (and its exported test fails) as it is BEHAVIOR CHANGED in ``diff``.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint, run_regression_case
from stepfork.trace import load_trace, record, trace_tool


@trace_tool
def create_order(item: str, idempotency_key: str) -> dict[str, str]:
    return {"item": item, "idempotency_key": idempotency_key, "status": "created"}


@trace_tool
def reserve(kind: str, ref: str) -> dict[str, str]:
    return {"kind": kind, "ref": ref, "status": "held"}


def keyed_agent() -> dict[str, str]:
    key = str(uuid.uuid4())
    create_order("book", idempotency_key=key)
    bug = os.environ.get("BUG") == "1"
    return {"key": str(uuid.uuid4()) if bug else key}  # the bug: a new id, not the key sent


def trip_agent() -> dict[str, str]:
    flight, hotel = str(uuid.uuid4()), str(uuid.uuid4())
    reserve("flight", flight)
    reserve("hotel", hotel)
    if os.environ.get("BUG") == "1":
        flight, hotel = hotel, flight  # the bug: the refs swapped
    return {"flight_ref": flight, "hotel_ref": hotel}


def recorded(tmp_path: Path, agent: Any, name: str) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("one-renaming", output=bundle) as session:
        session.set_output(agent())
    return bundle


@pytest.mark.parametrize("agent", [keyed_agent, trip_agent])
def test_the_output_keeps_the_renaming_of_the_inputs(
    tmp_path: Path, agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = recorded(tmp_path, agent, "good")
    same = replay_entrypoint(bundle, agent)
    assert (same.matching.status, same.behavior.status) == ("COMPLETE", "MATCHED"), same.behavior.message
    monkeypatch.setenv("BUG", "1")
    wrong = replay_entrypoint(bundle, agent)
    assert wrong.matching.status == "COMPLETE"  # the calls were the same
    assert wrong.behavior.status == "DIVERGED", wrong.behavior.message
    with pytest.raises(AssertionError, match="behavior mismatch"):
        run_regression_case(agent, bundle, expectation=load_trace(bundle).events[-1].output)
    assert not diff_traces(bundle, recorded(tmp_path, agent, "bug")).equivalent  # replay and diff agree
