"""Quickstart agent: decide whether to notify a customer about their order.

The agent looks the order up with the ``order_status`` tool, asks a model whether the customer should
be notified, and returns ``{"order_id", "should_notify", ...}``. The model is a deterministic local client
(no network, no key), called through ``llm_request`` so Stepfork records and replays it like a real one.

The bug: ``run_agent`` reads the model's reply as if it still had the old ``should_notify`` field, so a
shipped order is never notified. ``run_agent_fixed`` reads the current ``action`` field and reports the
carrier too. Both make exactly the same dependency calls, so either replays against the recording.

    python quickstart.py record notify.sftrace     # record the buggy run into a bundle (--overwrite: replace)
    stepfork replay notify.sftrace --entrypoint quickstart:run_agent
"""

from __future__ import annotations

import sys
from typing import Any

from stepfork import llm_request, record, trace_tool

ORDER_ID = "ORD-1001"
MODEL = "local-notify-1"

# The order system this example pretends to call.
_ORDERS = {
    "ORD-1001": {"status": "shipped", "carrier": "FedEx", "tracking": "7712 3456 9901"},
    "ORD-1002": {"status": "processing", "carrier": None, "tracking": None},
}


@trace_tool
def order_status(order_id: str) -> dict[str, Any]:
    """Look an order up in the order system (a tool: recorded, and served from the bundle on replay)."""
    order = _ORDERS.get(order_id)
    if order is None:
        raise LookupError(f"unknown order {order_id}")
    return {"order_id": order_id, **order}


class LocalModelClient:
    """A deterministic stand-in for a chat model: answers from keywords in the last user message."""

    def complete(self, messages: list[dict[str, str]]) -> dict[str, str]:
        """Return ``{"action": "notify" | "wait", "reason": str}`` for the conversation."""
        text = messages[-1]["content"].lower()
        if "status: shipped" in text:
            return {"action": "notify", "reason": "the order has shipped"}
        return {"action": "wait", "reason": "nothing to tell the customer yet"}


_MODEL = LocalModelClient()


def _decide(order: dict[str, Any]) -> dict[str, str]:
    messages = [
        {"role": "system", "content": "You decide whether to send a shipping notification."},
        {"role": "user", "content": f"Order {order['order_id']} status: {order['status']}"},
    ]
    return llm_request(
        model=MODEL,
        provider="local",
        input={"messages": messages},
        call=lambda: _MODEL.complete(messages),
    )


def run_agent(order_id: str = ORDER_ID) -> dict[str, Any]:
    """The buggy agent: the model's reply has an ``action`` field, but this reads ``should_notify``."""
    order = order_status(order_id)
    reply = _decide(order)
    return {"order_id": order_id, "should_notify": bool(reply.get("should_notify", False))}


def run_agent_fixed(order_id: str = ORDER_ID) -> dict[str, Any]:
    """The fixed agent: reads ``action`` and tells the customer which carrier has the parcel."""
    order = order_status(order_id)
    reply = _decide(order)
    result: dict[str, Any] = {"order_id": order_id, "should_notify": reply["action"] == "notify"}
    if result["should_notify"]:
        result["carrier"] = order["carrier"]
    return result


def record_run(bundle: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the buggy agent under ``stepfork.record`` and write the bundle to ``bundle``.

    An existing bundle there is replaced only with ``overwrite`` (else ``record`` raises
    ``TraceStorageError`` with code ``already_exists`` before the agent runs).
    """
    run_input = {"order_id": ORDER_ID}
    with record("notify-agent", output=bundle, overwrite=overwrite, run_input=run_input) as session:
        result = run_agent()
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record BUNDLE.sftrace [--overwrite]``: record, print the run's output; 2 for bad input (one line)."""
    from stepfork.trace import record_main

    return record_main(argv, {"record": record_run}, show=str)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
