"""A value the agent sent before any dependency output held it is the agent's own (NEWCOMER4 F1, F5-F7).

"Handed out" (docs/diff.md) means a dependency gave the value to the agent. A value the agent's own code
made and *sent* (a ticket id in the tool message, an idempotency key, Responses API ``metadata``, a
``str(int(time.time()))``) stays the agent's when a later output echoes it: the model quoting it, the tool
echoing the key, the provider echoing the request's fields or answering in the same second. Two recordings
of the same code are EQUIVALENT and a replay MATCHED; a value a dependency gave first must still match.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from stepfork.analysis import diff_traces
from stepfork.replay import replay_entrypoint
from stepfork.trace import record, trace_tool
from stepfork.trace.instrument import llm_request


def open_ticket(city: str) -> dict[str, str]:
    """A tool the program runs itself (not an instrumented boundary): its id reaches the model only."""
    return {"city": city, "ticket": str(uuid.uuid4()), "status": "open"}


def model(messages: list[dict[str, Any]], **request: Any) -> dict[str, Any]:
    """A model that quotes what the tool message said, and a Responses-API-like echo of request fields."""
    answer = f"Done: {messages[-1]['content']}" if messages[-1]["role"] == "tool" else "Calling the tool."
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "content": answer, **request}


def ask(messages: list[dict[str, Any]], **request: Any) -> dict[str, Any]:
    payload = {"messages": messages, **request}
    return llm_request(model="m", input=payload, call=lambda: model(messages, **request))


def quoting_agent() -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Open a ticket for Paris."}]
    ask(messages)
    messages.append({"role": "tool", "content": json.dumps(open_ticket("Paris"))})
    return str(ask(messages)["content"])


def echoing_provider_agent() -> str:
    request = {"metadata": {"request_id": str(uuid.uuid4()), "ts": str(int(time.time()))}}
    answer = ask([{"role": "user", "content": "Say hi"}], user=f"session-{uuid.uuid4()}", **request)
    return str(answer["content"])


@trace_tool
def create_order(item: str, idempotency_key: str) -> dict[str, str]:
    return {"order_id": "ORD-1", "item": item, "idempotency_key": idempotency_key}


def idempotent_agent() -> dict[str, str]:
    return create_order("book", idempotency_key=str(uuid.uuid4()))


def recorded(tmp_path: Path, agent: Any, name: str) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("sent-first", output=bundle) as session:
        session.set_output(agent())
    return bundle


@pytest.mark.parametrize("agent", [quoting_agent, echoing_provider_agent, idempotent_agent])
def test_a_value_the_agent_sent_first_is_fresh_when_a_later_output_echoes_it(
    tmp_path: Path, agent: Any
) -> None:
    first, second = recorded(tmp_path, agent, "first"), recorded(tmp_path, agent, "second")
    result = diff_traces(first, second)
    assert result.equivalent, str(result)
    assert result.renamed >= 1
    outcome = replay_entrypoint(first, agent)
    assert outcome.matching.status == "COMPLETE", outcome.matching.message
    assert outcome.behavior.status == "MATCHED", outcome.behavior.message


@trace_tool
def book(city: str) -> dict[str, str]:
    return {"city": city, "booking_id": str(uuid.uuid4())}


@trace_tool
def confirm(booking_id: str) -> dict[str, str]:
    return {"confirmed": booking_id}


def booking_agent(wrong: bool = False) -> dict[str, str]:
    booking = book("Paris")
    sent = str(uuid.uuid4()) if wrong else booking["booking_id"]  # the bug: an id nobody handed out
    return {"booking": confirm(sent)["confirmed"]}


def test_an_id_a_dependency_gave_first_must_still_match_where_the_agent_sends_it_on(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, booking_agent, "booking")
    assert replay_entrypoint(bundle, booking_agent).behavior.status == "MATCHED"
    wrong = replay_entrypoint(bundle, lambda: booking_agent(wrong=True))
    assert wrong.matching.status == "DIVERGED"
    assert "booking_id" in wrong.matching.message
    other = recorded(tmp_path, lambda: booking_agent(wrong=True), "wrong")
    assert not diff_traces(bundle, other).equivalent


@trace_tool
def open_ticket_api(city: str) -> dict[str, str]:
    return {"city": city, "ticket": uuid.uuid4().hex, "ref": uuid.uuid4().hex[:12]}


@trace_tool
def close_ticket(ticket_id: str, ref: str) -> str:
    return "closed"


def respelling_agent(own: bool = False) -> str:
    opened = open_ticket_api("Paris")
    ticket = str(uuid.UUID(opened["ticket"]))  # the next API wants the dashed form
    ref = opened["ref"].upper()
    if own:  # the bug: the agent's own fresh values instead of the ones the tool handed out
        ticket, ref = str(uuid.uuid4()), uuid.uuid4().hex[:12].upper()
    return close_ticket(ticket, ref)


def test_a_handed_out_id_passed_on_in_another_spelling_is_still_handed_out(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, respelling_agent, "respelled")
    assert diff_traces(bundle, recorded(tmp_path, respelling_agent, "again")).equivalent
    assert replay_entrypoint(bundle, respelling_agent).behavior.status == "MATCHED"
    own = replay_entrypoint(bundle, lambda: respelling_agent(own=True))
    assert own.matching.status == "DIVERGED", own.matching.message
    changed = diff_traces(bundle, recorded(tmp_path, lambda: respelling_agent(own=True), "own"))
    assert {"input.ticket_id", "input.ref"} <= {c.path for c in changed.changes}


@trace_tool
def last_login(user: str) -> dict[str, str]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"user": user, "at": stamp}


@trace_tool
def audit(since: str) -> str:
    return "ok"


def audit_agent(own: bool = False) -> str:
    import datetime

    given = datetime.datetime.fromisoformat(last_login("ann")["at"].replace("Z", "+00:00"))
    if own:  # the bug: its own clock instead of the time the tool gave
        given = datetime.datetime.now(datetime.UTC).replace(microsecond=0) + datetime.timedelta(seconds=1)
    return audit(since=given.isoformat())  # the tool's "...Z", re-written "+00:00"


def test_a_handed_out_time_passed_on_in_another_format_is_still_handed_out(tmp_path: Path) -> None:
    bundle = recorded(tmp_path, audit_agent, "audit")
    assert replay_entrypoint(bundle, audit_agent).behavior.status == "MATCHED"
    own = replay_entrypoint(bundle, lambda: audit_agent(own=True))
    assert own.matching.status == "DIVERGED", own.matching.message
