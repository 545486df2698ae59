"""A concurrent group whose calls carry fresh values reaches the replay in any order (newcomer 5's control).

Pool threads refund two customers, each with a fresh ``str(uuid4())`` idempotency key. The recording proves
the two calls concurrent (they ran on a pool's thread), so a replay takes them in either order. A live call
whose input equals no member's exactly (its key is fresh) used to be checked against the group's earliest
member: the second customer's call, arriving first, was DIVERGED at ``$.customer``, about 1 replay in 16.
It is now checked against the member its input equals up to the renaming of fresh values, a trial that
binds nothing.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from stepfork.replay import replay_entrypoint
from stepfork.trace import record, trace_tool


@trace_tool
def refund(customer: str, amount: int, idempotency_key: str) -> dict[str, Any]:
    return {"ok": True, "customer": customer}


def refund_agent(customers: tuple[str, ...] = ("alice", "bob")) -> dict[str, Any]:
    with ThreadPoolExecutor(1) as pool:  # one worker: the order of `customers` is the order of the calls
        done = list(pool.map(lambda c: refund(c, 10, str(uuid.uuid4())), customers))
    return {"refunded": sorted(d["customer"] for d in done)}


def test_pool_calls_with_fresh_keys_replay_in_either_order(tmp_path: Path) -> None:
    bundle = tmp_path / "refunds.sftrace"
    with record("refunds", output=bundle) as session:
        session.set_output(refund_agent())
    for order in (("alice", "bob"), ("bob", "alice")):
        outcome = replay_entrypoint(bundle, lambda order=order: refund_agent(order))
        assert outcome.matching.status == "COMPLETE", (order, outcome.matching.message)
        assert outcome.behavior.status == "MATCHED"
    wrong = replay_entrypoint(bundle, lambda: refund_agent(("alice", "alice")))
    assert wrong.matching.status == "DIVERGED"
    assert "customer" in wrong.matching.message
