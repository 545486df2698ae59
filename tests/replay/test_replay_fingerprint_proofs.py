"""Stored fingerprints proven once, when the session is built (issue 31; stepfork.replay.fingerprints).

The set-up only moves work: a replay's verdict, error codes and the call at which a wrong stored hash is
reported are those of the check at the call, which the property below computes with the exact rule
(``canonical_json`` of both inputs, SHA-256 of the recorded one) on generated values.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.replay.fingerprints import INPUT, OUTPUT, TAGGED, prove_fingerprints
from stepfork.trace import RunStart, ToolCall, ToolResult, Trace, fingerprint, trace_tool
from stepfork.trace.canonical import canonical_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trace"))  # the shared strategies
from json_strategies import json_values

CALLS: list[Any] = []


@trace_tool(name="lookup")
def lookup(query: Any) -> Any:
    CALLS.append(query)
    return {"live": True}


def _trace(calls: list[tuple[Any, str | None, Any, str | None]]) -> Trace:
    """A run of ``lookup`` calls: ``(input, input_hash, output, output_hash)`` each."""
    trace = Trace(run_id="run_proofs", agent_name="proofs")
    start = trace.add(RunStart(id="e0", run_id="run_proofs"))
    for n, (value, input_hash, output, output_hash) in enumerate(calls):
        call = trace.add(
            ToolCall(
                id=f"c{n}",
                run_id="run_proofs",
                parent_id=start.id,
                name="lookup",
                input={"query": value},
                input_hash=input_hash,
            )
        )
        trace.add(
            ToolResult(
                id=f"r{n}",
                run_id="run_proofs",
                parent_id=call.id,
                name="lookup",
                output=output,
                output_hash=output_hash,
            )
        )
    return trace


def _good(n: int) -> tuple[Any, str, Any, str]:
    return n, fingerprint({"query": n}), {"n": n}, fingerprint({"n": n})


@pytest.mark.parametrize(
    ("broken", "code"),
    [
        ((2, "0" * 64, {"n": 2}, fingerprint({"n": 2})), "invalid_input_fingerprint"),
        ((2, fingerprint({"query": 2}), {"n": 2}, "f" * 64), "invalid_output_fingerprint"),
    ],
)
def test_a_wrong_stored_fingerprint_is_reported_at_its_call_not_when_the_session_is_built(
    broken: tuple[Any, str, Any, str], code: str
) -> None:
    CALLS.clear()
    trace = _trace([_good(0), _good(1), broken, _good(3)])
    with ReplaySession.from_trace(trace) as replay:
        assert lookup(0) == {"n": 0}
        assert lookup(1) == {"n": 1}
        with pytest.raises(ReplayMismatchError) as info:
            lookup(2)
    assert info.value.code == code
    assert info.value.diagnostic.index == 2
    assert replay.consumed == 2
    assert CALLS == []


def test_the_set_up_proves_what_orjson_can_and_leaves_the_rest_to_the_call() -> None:
    big = 2**70  # orjson refuses it: proven at the call, by the exact rule
    raw = {"$stepfork": "bytes", "value": "AA=="}
    trace = _trace(
        [
            _good(0),
            (big, fingerprint({"query": big}), {"n": big}, fingerprint({"n": big})),
            (1, None, raw, fingerprint(raw)),
            (2, "0" * 64, None, "f" * 64),
        ]
    )
    session = ReplaySession(trace)
    assert list(prove_fingerprints(session.calls)) == [INPUT | OUTPUT, 0, OUTPUT | TAGGED, 0]
    with session:
        assert lookup(0) == {"n": 0}
        assert lookup(big) == {"n": big}
        assert lookup(1) == b"\x00"
    assert CALLS == []


def _verdict(recorded: Any, stored: str, live: Any) -> str:
    """What the check at the call decides, by the exact rule (the reference for the property below)."""
    recorded_bytes = canonical_json({"query": recorded}, assume_json=True)
    if fingerprint({"query": recorded}, assume_json=True) != stored:
        return "invalid_input_fingerprint"
    return "ok" if canonical_json({"query": live}) == recorded_bytes else "input_diverged"


@settings(max_examples=150)
@given(
    recorded=json_values,
    live=json_values,
    same=st.booleans(),
    tampered=st.booleans(),
)
def test_a_proven_fingerprint_gives_the_verdict_of_the_exact_rule(
    recorded: Any, live: Any, same: bool, tampered: bool
) -> None:
    live_value = recorded if same else live
    stored = fingerprint({"query": live_value if tampered else recorded})
    trace = _trace([(recorded, stored, {"ok": 1}, fingerprint({"ok": 1}))])
    expected = _verdict(recorded, stored, live_value)
    with ReplaySession.from_trace(trace):
        try:
            lookup(live_value)
            verdict = "ok"
        except ReplayMismatchError as error:
            verdict = error.code
    assert verdict == expected
