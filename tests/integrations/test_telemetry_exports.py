"""Telemetry exports are never a divergence (issue 30): a library's trace export is answered, not matched.

The OpenAI Agents SDK exports its traces from a background thread (``POST /v1/traces/ingest``, every five
seconds and at exit), an OpenTelemetry exporter its spans (``POST /v1/traces``), CrewAI its anonymous
telemetry (``telemetry.crewai.com:4319``). Each export's body is the run's span ids, clock times and
batching, new in every run, and the exporter's timer decides when it goes: a replay that ran past the timer
sent a body the recording could not hold, and before this issue it was refused as ``request_not_recorded``:
DIVERGED on unchanged code. Now a sealed replay answers every telemetry export ``204 No Content`` without
sending or matching it, refuses a connection to a known telemetry collector without diverging, counts both
apart, and ``diff`` leaves them out. Real httpx clients against a real server on 127.0.0.1
(helpers/local_openai.py), whose counter proves nothing was sent.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from local_openai import LocalOpenAI, kept, serving

from stepfork.analysis import diff_traces
from stepfork.integrations.httpx import instrument_httpx
from stepfork.replay import ReplaySession
from stepfork.replay.errors import ReplayMismatchError, ReplayPolicyError
from stepfork.trace import load_trace, record
from stepfork.trace.http_calls import is_telemetry, is_telemetry_host


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def export(http: httpx.Client, url: str, workflow: str = "Agent workflow") -> int:
    """One trace export as an exporter sends it: fresh trace and span ids and clock times; its status."""
    trace = f"trace_{uuid.uuid4().hex}"
    data = [
        {"object": "trace", "id": trace, "workflow_name": workflow},
        {"object": "trace.span", "id": f"span_{uuid.uuid4().hex[:24]}", "trace_id": trace},
    ]
    return http.post(url, json={"data": data}).status_code


def agent(
    server: LocalOpenAI,
    path: str,
    *,
    exports: int = 1,
    background: bool = True,
    tell: bool = True,
    workflow: str = "Agent workflow",
) -> Any:
    """A program that asks the model and whose tracing exports ``exports`` times to ``path`` (from a
    thread of its own, as the exporters do, unless ``background`` is False) under the name ``workflow``;
    its output holds the exports' statuses when ``tell``."""
    http = instrument_httpx(kept(httpx.Client()))
    root = server.base_url.removesuffix("/v1")

    def run() -> dict[str, Any]:
        statuses: list[int] = []

        def flush() -> None:
            statuses.extend(export(http, f"{root}{path}", workflow) for _ in range(exports))

        if background:
            thread = threading.Thread(target=flush)
            thread.start()
            thread.join()
        else:
            flush()
        reply = http.post(
            f"{server.base_url}/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}]},
        )
        answer = reply.json()["choices"][0]["message"]["content"]
        return {"answer": answer, "exports": statuses} if tell else {"answer": answer}

    return run


def recorded(tmp_path: Path, server: LocalOpenAI, path: str, name: str = "run", **options: Any) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    with record("traced", output=bundle) as session:
        session.set_output(agent(server, path, **options)())
    return bundle


@pytest.mark.parametrize("path", ["/v1/traces/ingest", "/v1/traces"])
def test_an_export_with_another_body_is_answered_without_a_divergence(
    tmp_path: Path, server: LocalOpenAI, path: str
) -> None:
    bundle = recorded(tmp_path, server, path)
    names = [e.name for e in load_trace(bundle).events if str(e.type) == "tool_call"]
    assert names == [f"http POST {server.base_url.removesuffix('/v1')}{path}"]  # recorded as an http call
    sent = len(server.requests)
    with ReplaySession.from_trace(bundle) as session:
        result = agent(server, path)()  # new trace and span ids: a body the recording does not hold
        session.verify_complete()
    assert result["exports"] == [204]
    assert session.divergence is None
    assert [(r.action, r.step) for r in session.served_requests] == [("acknowledged", None)]
    assert len(server.requests) == sent


def test_exports_the_recording_never_saw_are_answered_from_any_thread(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    bundle = recorded(tmp_path, server, "/v1/traces/ingest", exports=0)  # the export timer never fired
    sent = len(server.requests)
    for background in (True, False):  # the exporter's thread, or flush_traces() in the agent's own
        with ReplaySession.from_trace(bundle) as session:
            result = agent(server, "/v1/traces/ingest", exports=2, background=background)()
            session.verify_complete()
        assert result["exports"] == [204, 204]
        assert [r.background for r in session.served_requests] == [background, background]
    assert len(server.requests) == sent


def test_a_request_that_is_not_telemetry_is_still_refused(tmp_path: Path, server: LocalOpenAI) -> None:
    bundle = recorded(tmp_path, server, "/v1/uploads", background=False)
    with ReplaySession.from_trace(bundle) as session:  # only its fresh ids differ: it is the same request
        agent(server, "/v1/uploads", background=False)()
        session.verify_complete()
    assert [r.action for r in session.served_requests] == ["substituted"]
    with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayMismatchError) as caught:
        agent(server, "/v1/uploads", background=False, workflow="Refund workflow")()  # another body
    assert caught.value.code == "request_not_recorded"
    assert session.divergence is not None


def test_diff_of_two_runs_leaves_their_exports_out(tmp_path: Path, server: LocalOpenAI) -> None:
    one = recorded(tmp_path, server, "/v1/traces/ingest", name="one", tell=False)
    two = recorded(tmp_path, server, "/v1/traces/ingest", name="two", exports=3, tell=False)
    result = diff_traces(one, two)
    assert result.equivalent, str(result)
    assert [s.step_type for s in result.steps] == ["llm", "run"]


def test_the_rule_names_exports_not_apis() -> None:
    assert is_telemetry("POST", "https://api.openai.com/v1/traces/ingest")
    assert is_telemetry("post", "http://127.0.0.1:4318/v1/traces?x=1")
    assert is_telemetry("POST", "https://telemetry.crewai.com:4319/anything")
    assert not is_telemetry("GET", "https://api.openai.com/v1/traces/ingest")
    assert not is_telemetry("POST", "https://api.openai.com/v1/chat/completions")
    assert not is_telemetry("POST", "https://api.example.com/v1/traces/export")
    assert is_telemetry_host("Telemetry.CrewAI.com:4319")
    assert not is_telemetry_host("crewai.com")


def test_the_seal_refuses_a_telemetry_collector_without_a_divergence(tmp_path: Path) -> None:
    bundle = tmp_path / "empty.sftrace"
    with record("quiet", output=bundle) as session:
        session.set_output("done")
    with ReplaySession.from_trace(bundle) as replay:
        with pytest.raises(ReplayPolicyError) as caught:  # CrewAI's exporter, over requests: not captured
            socket.getaddrinfo("telemetry.crewai.com", 4319)
        assert caught.value.code == "network_sealed"
        assert replay.divergence is None
        with pytest.raises(ReplayPolicyError):
            socket.getaddrinfo("collector.example.com", 4319)  # any other host is still a divergence
        assert replay.divergence is not None
    assert [(r.label, r.action) for r in replay.served_requests] == [
        ("telemetry telemetry.crewai.com:4319", "refused")
    ]
