"""The agent behind the fuzzed bundles: ``fuzz_agent:run_agent`` is the trusted entrypoint the CLI campaigns
replay, minimize, fork and export against damaged copies of the bundle it records (``record_into``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepfork.trace import llm_request, record, trace_tool


class Unavailable(RuntimeError):
    """The tool failure recorded in the base bundle."""


@trace_tool
def search(query: str, limit: int = 10) -> dict[str, Any]:
    return {"hits": [query, "second"], "limit": limit, "raw": b"\x00\xffbin", "score": 0.25}


@trace_tool
def book(flight: str) -> str:
    raise Unavailable(f"no seats on {flight}")


def run_agent() -> dict[str, Any]:
    found = search("oslo", limit=3)
    plan = llm_request(
        model="m-fuzz", input={"messages": [{"role": "user", "content": "plan"}]}, call=lambda: "go"
    )
    try:
        book("SK-100")
    except Exception:  # recording: Unavailable; replay: RecordedDependencyError (C8)
        status = "unavailable"
    else:
        status = "booked"
    return {"hits": len(found["hits"]) if isinstance(found, dict) else 0, "plan": plan, "status": status}


def record_into(path: Path) -> Path:
    """Record one completed run of :func:`run_agent` at ``path`` (a ``.sftrace`` directory)."""
    with record("fuzz-agent", output=path, run_input={"city": "oslo"}) as session:
        session.set_output(run_agent())
    return path
