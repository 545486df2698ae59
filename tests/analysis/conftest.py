"""Bundle factories for the analysis tests: small agents recorded through the real boundary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stepfork.trace import llm_request, record, trace_tool


@trace_tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """A tool whose output the tests vary through the ``price`` and ``status`` of the agent config."""
    return dict(_CONFIG["order"], order_id=order_id)


@trace_tool
def log_event(name: str) -> bool:
    """A side tool that some variants call (the C7 insertion)."""
    return True


_CONFIG: dict[str, Any] = {}


def notify_agent(config: dict[str, Any]) -> dict[str, Any]:
    """Look up an order, optionally log, ask the (fake) LLM whether to notify, return the decision."""
    _CONFIG.clear()
    _CONFIG.update(config)
    order = lookup_order("ORD-1001")
    if config.get("log"):
        log_event("checked")
    decision = llm_request(
        model="fake-1",
        provider="fake",
        input={"order": order},
        call=lambda: {"notify": config.get("notify", False)},
    )
    result = {"order_id": "ORD-1001", "should_notify": decision["notify"]}
    result.update(config.get("extra", {}))
    return result


@pytest.fixture
def record_notify(tmp_path: Path) -> Callable[..., Path]:
    """Record ``notify_agent(config)`` into ``tmp_path/<name>.sftrace`` and return the bundle path."""

    def _record(name: str, **config: Any) -> Path:
        config.setdefault("order", {"status": "delayed", "price": 320})
        out = tmp_path / f"{name}.sftrace"
        with record("notify-agent", output=out) as session:
            session.set_output(notify_agent(config))
        return out

    return _record
