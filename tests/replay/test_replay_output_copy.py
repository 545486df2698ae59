"""A frozen replay of an unannotated call hands back a fresh, equal copy of the recorded output.

Untagged outputs are copied by an orjson round trip (docs/performance.md, "HTTP capture"); tagged ones
still go through the decoding walk. Either way the agent gets values equal to the recorded ones, in
recorded key order, and mutating them never changes what the session recorded as served.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import stepfork
from stepfork.replay import ReplaySession
from stepfork.trace import record

OUTPUTS: list[Any] = []


@stepfork.trace_tool
def lookup(n: int):  # type: ignore[no-untyped-def]  # no return annotation: the output as decoded
    return OUTPUTS[n]


def test_unannotated_outputs_replay_as_fresh_equal_copies(tmp_path: Path) -> None:
    OUTPUTS[:] = [
        {"zeta": 1, "alpha": [{"y": 0.1, "x": -0.0}, None, True], "big": 2**63 - 1, "s": "é\u2028"},
        [1.5e-7, {"k": "v"}],
        {"raw": b"\x00\xff"},  # recorded as a tagged form: decoded to bytes by the walk
        {"huge": 2**70},  # beyond 64 bits: orjson refuses it, the walk decodes it
    ]
    bundle = tmp_path / "copy.sftrace"
    with record("copy", output=bundle):
        recorded = [lookup(n) for n in range(len(OUTPUTS))]
    with ReplaySession.from_trace(bundle) as session:
        replayed = [lookup(n) for n in range(len(OUTPUTS))]
        replayed[0]["alpha"][0]["y"] = "changed"
        again = session.trace.events  # what the session serves from is untouched
    assert replayed[1:] == recorded[1:]
    assert replayed[2] == {"raw": b"\x00\xff"}
    assert replayed[3] == {"huge": 2**70}
    assert list(replayed[0]) == ["zeta", "alpha", "big", "s"]
    assert list(replayed[0]["alpha"][0]) == ["y", "x"]
    assert str(replayed[0]["alpha"][0]["x"]) == "-0.0"
    served = [e.output for e in again if e.type.value == "tool_result"]
    assert served[0]["alpha"][0]["y"] == 0.1


def test_a_call_that_only_reads_its_output_gets_the_checked_recorded_value(tmp_path: Path) -> None:
    """``BoundaryCall(reads_output=True)`` (the HTTP capture): the recorded JSON itself, no copy, once its
    fingerprint was checked; a tagged output is still decoded, and other calls still get copies."""
    from stepfork.trace.boundary import BoundaryCall

    OUTPUTS[:] = [{"zeta": [1, {"k": "v"}]}, {"raw": b"\x00"}, {"zeta": 2}]
    bundle = tmp_path / "borrow.sftrace"
    with record("borrow", output=bundle):
        for n in range(len(OUTPUTS)):
            lookup(n)

    def body() -> Any:
        raise AssertionError("a frozen replay never runs the body")

    with ReplaySession.from_trace(bundle) as session:
        first = session.handle(BoundaryCall("tool", "lookup", {"n": 0}, reads_output=True), body)
        tagged = session.handle(BoundaryCall("tool", "lookup", {"n": 1}, reads_output=True), body)
        copied = session.handle(BoundaryCall("tool", "lookup", {"n": 2}), body)
        recorded = session.calls
    assert first is recorded[0].output
    assert first == {"zeta": [1, {"k": "v"}]}
    assert tagged == {"raw": b"\x00"}  # decoded from its tagged form, not the tag itself
    assert copied == {"zeta": 2}
    assert copied is not recorded[2].output
    session.verify_complete()
