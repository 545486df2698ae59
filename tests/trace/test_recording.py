"""Recording a small agent end to end: events, parents, failures (C8), secrets (C5), the bundle on disk."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from pathlib import Path
from typing import Any

import pytest

from stepfork.trace import (
    EventType,
    LLMOutput,
    RecordingSession,
    Trace,
    active_recorder,
    allm_request,
    fingerprint,
    llm_request,
    record,
    trace_tool,
)
from stepfork.trace.bundle import prepare_event, serialize_event
from stepfork.trace.canonical import loads_json
from stepfork.trace.models import EVENT_ADAPTER

OPENAI_KEY = "sk-live0123456789abcdefghijKLMN"
BEARER = "eyJhbGciOiJIUzI1NiJ9abcdefgh12345"


class RateLimitedError(Exception):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@trace_tool
def lookup_customer(email: str, fields: tuple[str, ...] = ("name",)) -> dict[str, Any]:
    return {"email": email, "tier": "gold", "fields": list(fields)}


@trace_tool
def refund(order_id: str, amount: float) -> dict[str, Any]:
    audit(order_id)  # a nested tool call
    return {"order_id": order_id, "refunded": amount}


@trace_tool
def audit(order_id: str) -> None:
    return None


@trace_tool
def rate_limited_tool(query: str) -> str:
    try:
        raise TimeoutError("upstream timed out after 30s")
    except TimeoutError as exc:
        raise RateLimitedError("slow down", retry_after=3) from exc


@trace_tool(name="notes")
async def save_notes(note: dict[str, Any]) -> str:
    return "saved"


@trace_tool
def forward(payload: dict[str, Any]) -> str:
    return "forwarded"


def run_sync_agent(session: RecordingSession) -> None:
    customer = lookup_customer("ada@example.com")
    answer = llm_request(
        model="gpt-test",
        provider="openai",
        input={"messages": [{"role": "user", "content": f"refund {customer['email']}"}]},
        call=lambda: LLMOutput(
            "refund 10", prompt_tokens=12, completion_tokens=3, total_tokens=15, cost_usd=0.25
        ),
    )
    assert answer == "refund 10"
    refund("o-1", 10.0)
    with pytest.raises(RateLimitedError):
        rate_limited_tool("q")
    # C5: a secret under innocent key names, passed to a tool running in a worker thread
    ctx = contextvars.copy_context()
    worker = threading.Thread(
        target=ctx.run,
        args=(forward, {"note": f"use {OPENAI_KEY} here", "hdr": f"Authorization: Bearer {BEARER}"}),
    )
    worker.start()
    worker.join()
    session.set_output({"status": "refunded", "amount": 10.0})


@trace_tool
def failing_with_surrogate() -> None:
    raise ValueError("bad byte \udc80 in input")


def load_events(path: Path) -> list[dict[str, Any]]:
    lines = (path / "events.jsonl").read_bytes().splitlines()
    return [loads_json(line) for line in lines]


def test_recording_a_sync_agent_writes_every_call_as_paired_events(tmp_path: Path) -> None:
    out = tmp_path / "agent.sftrace"
    with record("refund agent", output=out, run_input={"ticket": 7}) as session:
        assert active_recorder() is session
        run_sync_agent(session)
    assert active_recorder() is None
    assert session.path == out
    events = load_events(out)
    types = [e["type"] for e in events]
    assert types == [
        "run_start",
        "tool_call",
        "tool_result",
        "llm_request",
        "llm_response",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "tool_call",
        "tool_result",
        "error",
        "tool_call",
        "tool_result",
        "run_end",
    ]
    assert [e["step"] for e in events] == list(range(len(events)))
    root = events[0]["id"]
    assert events[0]["input"] == {"ticket": 7}
    by_id = {e["id"]: e for e in events}
    # parents: calls under the run, results under their call, the nested audit under refund
    assert events[1]["parent_id"] == root
    assert events[2]["parent_id"] == events[1]["id"]
    assert events[6]["name"] == "audit"
    assert events[6]["parent_id"] == events[5]["id"]
    assert events[-1]["parent_id"] == root
    # C12: defaults are part of the bound input; the tuple keeps its tagged form
    assert events[1]["input"]["email"] == "ada@example.com"
    assert events[1]["input"]["fields"]["$stepfork"] == "tuple"
    # token usage and cost from LLMOutput
    response = events[4]
    assert (response["prompt_tokens"], response["completion_tokens"], response["total_tokens"]) == (12, 3, 15)
    assert response["cost_usd"] == 0.25
    assert response["output"] == "refund 10"
    assert response["model"] == "gpt-test"
    assert events[3]["provider"] == "openai"
    assert all(by_id[e["parent_id"]]["step"] < e["step"] for e in events[1:])
    assert events[-1]["run_status"] == "completed"
    assert events[-1]["output"] == {"status": "refunded", "amount": 10.0}


def test_a_failing_tool_records_error_result_and_chained_error_event(tmp_path: Path) -> None:
    out = tmp_path / "agent.sftrace"
    with record("a", output=out) as session:
        run_sync_agent(session)
    events = load_events(out)
    result = next(e for e in events if e["type"] == "tool_result" and e["status"] == "error")
    error = next(e for e in events if e["type"] == "error")
    qualified = f"{RateLimitedError.__module__}.{RateLimitedError.__qualname__}"
    assert result["output"] == {"error_type": qualified, "message": "slow down"}
    assert error["parent_id"] == result["id"]
    assert (error["error_type"], error["message"], error["status"]) == (qualified, "slow down", "error")
    assert error["details"] == {
        "chain": [{"type": "TimeoutError", "message": "upstream timed out after 30s"}]
    }
    assert error["output_hash"] == fingerprint(error["details"])


def test_the_bundle_validates_strictly_with_integrity_and_holds_no_secret(tmp_path: Path) -> None:
    validation = pytest.importorskip("stepfork.trace.validation")
    out = tmp_path / "agent.sftrace"
    with record("refund agent", output=out, run_input={"key": OPENAI_KEY}) as session:
        run_sync_agent(session)
    result = validation.validate_bundle(out, strict=True, verify_integrity=True)
    assert result.valid, result.issues
    for file in out.iterdir():
        data = file.read_bytes()
        assert OPENAI_KEY.encode() not in data, file.name
        assert BEARER.encode() not in data, file.name
    forward_call = next(e for e in load_events(out) if e.get("name") == "forward")
    assert sorted(forward_call["redactions"]) == ["/input/payload/hdr", "/input/payload/note"]
    entries = loads_json((out / "redactions.json").read_bytes())["entries"]
    assert {(e["event_id"], e["path"]) for e in entries} >= {
        (forward_call["id"], "/input/payload/hdr"),
        (forward_call["id"], "/input/payload/note"),
    }


def test_every_line_is_byte_identical_to_serialize_event_of_the_same_event(tmp_path: Path) -> None:
    out = tmp_path / "agent.sftrace"
    with record("a", output=out, run_input={"x": 1e-05, "big": 2**70, "s": "é\u2028"}) as session:
        run_sync_agent(session)
        session.record_state_change(key="cart", before=None, after={"items": [1, 2.5, 1e-7]})
        with session.llm_call(model="m", input={"p": "é"}) as handle:
            handle.set_output("ok", cost_usd=1e-05, total_tokens=2**40)
        with pytest.raises(ValueError):
            failing_with_surrogate()
    for line in (out / "events.jsonl").read_bytes().splitlines(keepends=True):
        event = EVENT_ADAPTER.validate_python(loads_json(line))
        assert serialize_event(event) == line


@trace_tool(name=f"lookup {OPENAI_KEY}")
def tool_named_like_a_secret(q: str) -> list[Any]:
    return [q, 1.5e-07, 2**70]


@trace_tool(name='quote " and é')
def tool_with_an_odd_name(q: Any) -> Any:
    return q


def test_tool_events_off_the_common_path_are_written_as_serialize_event_writes_them(tmp_path: Path) -> None:
    # the recorder writes a tool event straight from its parts unless the name or the payload needs the
    # redaction walk or the checked encoder, or a scope id needs escaping (issue 31, stepfork.trace.eventlog)
    out = tmp_path / "agent.sftrace"
    with record("a", output=out) as session:
        tool_named_like_a_secret("x")
        session.push_scope('scope "quoted" \u2028 é')
        tool_with_an_odd_name({"password": "hunter22", "keep": [1e-05, None]})
        tool_with_an_odd_name(("a", 1))
        tool_with_an_odd_name("plain text")
        tool_with_an_odd_name(None)
        session.pop_scope()
    lines = (out / "events.jsonl").read_bytes().splitlines(keepends=True)
    for line in lines:
        event = EVENT_ADAPTER.validate_python(loads_json(line))
        assert serialize_event(event) == line
        again, new_entries = prepare_event(event)
        assert (again, new_entries) == (line, [])
    events = [loads_json(line) for line in lines]
    assert events[1]["name"] == "lookup [REDACTED]"
    assert events[1]["redactions"] == ["/name"]
    assert events[3]["parent_id"] == 'scope "quoted" \u2028 é'


def test_every_line_is_already_redacted_and_hashed_as_bundle_saving_would(tmp_path: Path) -> None:
    out = tmp_path / "agent.sftrace"
    with record("a", output=out, run_input={"password": "hunter22", "n": f"Bearer {BEARER}"}) as session:
        run_sync_agent(session)
    for line in (out / "events.jsonl").read_bytes().splitlines(keepends=True):
        event = EVENT_ADAPTER.validate_python(loads_json(line))
        again, new_entries = prepare_event(event)  # redact_event + hashes, the save path of bundle_bytes.py
        assert again == line
        assert new_entries == []


def test_manifest_totals_and_trace_property(tmp_path: Path) -> None:
    out = tmp_path / "agent.sftrace"
    with record("a", output=out) as session:
        run_sync_agent(session)
    trace = session.trace
    assert isinstance(trace, Trace)
    assert trace.status == "completed"
    assert trace.failure is None
    assert trace.totals.events == len(trace.events) == 15
    assert (trace.totals.llm_calls, trace.totals.tool_calls) == (1, 5)
    assert trace.totals.cost_usd == 0.25
    assert trace.totals.duration_ms is not None
    assert trace.totals.duration_ms >= 0
    assert trace.environment.python is not None
    assert trace.run_id == session.run_id
    assert (out / "integrity.json").is_file()


def test_an_exception_escaping_the_block_is_the_recorded_failure_and_is_re_raised(tmp_path: Path) -> None:
    out = tmp_path / "failed.sftrace"
    boom = KeyError("missing order")

    def agent() -> None:
        with record("a", output=out):
            lookup_customer("x@example.com")
            raise boom

    with pytest.raises(KeyError) as raised:
        agent()
    assert raised.value is boom
    trace = Trace.load(out)
    error = trace.events[-2]
    assert error.type == EventType.ERROR
    assert error.parent_id == trace.events[0].id
    assert error.error_type == "KeyError"
    assert trace.status == "failed"
    assert trace.failure is not None
    assert (trace.failure.type, trace.failure.step) == ("KeyError", error.step)
    assert trace.failure.message == error.message == "'missing order'"
    assert trace.events[-1].run_status == "failed"
    assert trace.events[-1].output is None


def test_a_secret_in_an_exception_message_is_redacted_everywhere(tmp_path: Path) -> None:
    @trace_tool
    def leaky() -> None:
        raise RuntimeError(f"auth failed with {OPENAI_KEY}")

    out = tmp_path / "leak.sftrace"
    with pytest.raises(RuntimeError), record("a", output=out):
        leaky()
    for file in out.iterdir():
        assert OPENAI_KEY.encode() not in file.read_bytes(), file.name


def test_a_save_failure_while_an_exception_propagates_becomes_a_note(tmp_path: Path) -> None:
    out = tmp_path / "note.sftrace"

    def agent() -> None:
        with record("a", output=out):
            out.rename(tmp_path / "moved.sftrace")  # the bundle directory vanishes: finalize must fail
            raise ValueError("agent failed")

    with pytest.raises(ValueError) as raised:
        agent()
    notes = getattr(raised.value, "__notes__", [])
    assert any("trace was not saved" in note for note in notes)


def test_record_requires_a_fresh_path_unless_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "same.sftrace"
    with record("a", output=out):
        pass
    with pytest.raises(Exception) as raised, record("a", output=out):
        pass
    assert getattr(raised.value, "code", None) == "already_exists"
    with record("a", output=out, overwrite=True) as session:
        pass
    assert Trace.load(out).run_id == session.run_id


def test_default_path_uses_the_safe_agent_name_and_run_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with record("my agent/v2!") as session:
        pass
    assert session.path == Path(".stepfork/traces") / f"my-agent-v2-{session.run_id}.sftrace"
    assert (tmp_path / session.path / "manifest.json").is_file()


def test_a_session_cannot_be_re_entered_nor_record_after_it_finished(tmp_path: Path) -> None:
    session = record("a", output=tmp_path / "r.sftrace")
    with session:
        pass
    with pytest.raises(RuntimeError):
        session.__enter__()
    with pytest.raises(RuntimeError):
        session.record_state_change(key="k")


def test_manual_api_state_change_error_scopes_and_llm_call_handle(tmp_path: Path) -> None:
    out = tmp_path / "manual.sftrace"
    with record("a", output=out) as session:
        state_id = session.record_state_change(key="cart", before=[], after=["book"])
        session.push_scope(state_id or "")
        err_id = session.record_error("app.Problem", "it broke", details={"code": 3})
        session.pop_scope()
        with pytest.raises(RuntimeError):
            session.pop_scope()
        with session.llm_call(model="m1", input={"p": 1}, provider="acme") as handle:
            lookup_customer("inner@example.com")
            handle.set_output(
                {"text": "ok"}, prompt_tokens=1, completion_tokens=2, total_tokens=3, cost_usd=0.5
            )
    events = load_events(out)
    by_id = {e["id"]: e for e in events}
    assert by_id[err_id]["parent_id"] == state_id
    assert by_id[state_id]["after"] == ["book"]
    request = next(e for e in events if e["type"] == "llm_request")
    response = next(e for e in events if e["type"] == "llm_response")
    inner = next(e for e in events if e["type"] == "tool_call")
    assert inner["parent_id"] == request["id"]
    assert response["parent_id"] == request["id"]
    assert (response["output"], response["cost_usd"], response["total_tokens"]) == ({"text": "ok"}, 0.5, 3)


def test_an_llm_failure_records_an_error_under_the_request_and_re_raises(tmp_path: Path) -> None:
    def fail() -> str:
        raise ConnectionError("reset by peer")

    out = tmp_path / "llm.sftrace"
    with record("a", output=out), pytest.raises(ConnectionError):
        llm_request(model="m", input="hi", call=fail)
    events = load_events(out)
    request, error = events[1], events[2]
    assert request["type"] == "llm_request"
    assert error["type"] == "error"
    assert error["parent_id"] == request["id"]
    assert error["error_type"] == "ConnectionError"


def test_recording_an_async_agent_with_async_with(tmp_path: Path) -> None:
    out = tmp_path / "async.sftrace"

    async def call() -> LLMOutput:
        return LLMOutput({"reply": "hi"}, cost_usd=0.1)

    async def main() -> None:
        async with record("async agent", output=out) as session:
            await save_notes({"n": 1})
            await allm_request(model="m", input={"q": 1}, call=call)
            session.set_output("done")

    asyncio.run(main())
    trace = Trace.load(out)
    assert [e.type.value for e in trace.events] == [
        "run_start",
        "tool_call",
        "tool_result",
        "llm_request",
        "llm_response",
        "run_end",
    ]
    assert trace.events[1].name == "notes"
    assert trace.status == "completed"
    assert trace.events[-1].output == "done"
    assert trace.totals.cost_usd == 0.1


def test_a_session_inside_a_replay_is_inert(tmp_path: Path) -> None:
    from stepfork.trace.boundary import using_handler

    class FakeReplay:
        is_replay = True

        def handle(self, call: Any, body: Any, *, orphan: bool = False) -> Any:
            return "replayed"

        async def ahandle(self, call: Any, body: Any, *, orphan: bool = False) -> Any:
            return "replayed"

    out = tmp_path / "inert.sftrace"
    with using_handler(FakeReplay()), record("a", output=out) as session:
        assert lookup_customer("a@b.c") == "replayed"
        session.set_output("x")
        assert session.record_state_change(key="k") is None
    assert session.inert
    assert session.path is None
    assert session.trace is None
    assert not out.exists()


def test_an_unserializable_run_input_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "bad.sftrace"
    with pytest.raises(TypeError) as raised, record("a", output=out, run_input={"f": object()}):
        pass
    assert getattr(raised.value, "path", None) == "$.f"
    assert not out.exists()


def test_a_save_failure_on_a_clean_exit_is_raised(tmp_path: Path) -> None:
    out = tmp_path / "gone.sftrace"

    def agent() -> None:
        with record("a", output=out):
            out.rename(tmp_path / "elsewhere.sftrace")

    with pytest.raises(OSError):
        agent()
