"""Requests outside the agent's order (issue 29, CASES C14): a request from a thread without the session's
context (a library's background fetch) and a request that is not an LLM API call (a GET of a JSON file, a
health check) are recorded as ``http`` calls, served on replay by their request in any order, counted apart,
and refused by name when the recording does not hold them; real OpenAI SDK and httpx clients against a real
OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py), whose counter proves nothing was sent."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from local_openai import LocalOpenAI, kept, serving

from stepfork.integrations._http_exchange import is_llm_request
from stepfork.integrations.httpx import instrument_httpx
from stepfork.integrations.openai import instrument_openai
from stepfork.replay import ReplaySession
from stepfork.replay.outcome import replay_entrypoint
from stepfork.trace import load_trace, record, validate_bundle
from stepfork.trace.http_calls import is_http_call

STEPFORK = Path(sys.executable).parent / "stepfork"


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def clients(server: LocalOpenAI) -> tuple[Any, httpx.Client]:
    """The agent's OpenAI client and its plain httpx client, each instrumented with one line."""
    client = kept(openai.OpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0))
    return instrument_openai(client), instrument_httpx(kept(httpx.Client()))


def weather_agent(
    server: LocalOpenAI, *, background_first: bool = False, query: str = ""
) -> Callable[[], Any]:
    """The agent: a library thread (started without the context) fetches the model-cost map, the agent
    checks the server's health and asks the model. ``background_first`` waits for the fetch before the
    rest (another timing of the same run); ``query`` changes the fetched URL (a request never recorded)."""
    client, http = clients(server)
    root = server.base_url.removesuffix("/v1")

    def run() -> dict[str, Any]:
        prices: dict[str, Any] = {}

        def fetch() -> None:
            try:
                prices.update(http.get(f"{root}/model_prices.json{query}").json())
            except Exception as exc:  # a library swallowing its own failure, as LiteLLM's retry thread does
                prices["failed"] = type(exc).__name__

        thread = threading.Thread(target=fetch)
        thread.start()
        if background_first:
            thread.join()
        health = http.get(f"{root}/health").json()["status"]
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "What is the weather in Paris?"}]
        )
        thread.join()
        return {"answer": reply.choices[0].message.content, "health": health, "prices": sorted(prices)}

    return run


def recorded(tmp_path: Path, server: LocalOpenAI, name: str = "run", **options: Any) -> Path:
    bundle = tmp_path / f"{name}.sftrace"
    agent = weather_agent(server, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a background request is expected: no OrphanCallWarning
        with record("weather", output=bundle) as session:
            session.set_output(agent())
    return bundle


def test_requests_outside_the_agents_order_are_recorded_as_http_calls_in_schema_0_1(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    bundle = recorded(tmp_path, server)
    assert validate_bundle(bundle, strict=True, verify_integrity=True).valid
    events = load_trace(bundle).events
    root = server.base_url.removesuffix("/v1")
    calls = {str(e.type): [] for e in events}
    for event in events:
        calls[str(event.type)].append(event)
    assert [e.model for e in calls["llm_request"]] == ["gpt-4o-mini"]
    names = sorted(e.name for e in calls["tool_call"])
    assert names == [f"http GET {root}/health", f"http GET {root}/model_prices.json"]
    assert all(is_http_call(name) for name in names)
    fetch = next(e for e in calls["tool_call"] if e.name.endswith("model_prices.json"))
    assert fetch.input == {"method": "GET", "url": f"{root}/model_prices.json", "body": None}
    assert fetch.parent_id == calls["run_start"][0].id  # from another thread: recorded under the run
    result = next(e for e in calls["tool_result"] if e.name == fetch.name)
    assert result.output["status"] == 200
    assert result.output["json"] == {"local-model": {"input_cost_per_token": 0.0, "max_tokens": 8192}}


@pytest.mark.parametrize("background_first", [False, True])
def test_they_are_served_by_their_request_in_any_order_and_counted_apart(
    tmp_path: Path, server: LocalOpenAI, background_first: bool
) -> None:
    bundle = recorded(tmp_path, server)
    sent = len(server.requests)
    outcome = replay_entrypoint(bundle, weather_agent(server, background_first=background_first))
    assert len(server.requests) == sent  # nothing reached the server
    assert (outcome.exit_code, outcome.matching.status, outcome.behavior.status) == (0, "COMPLETE", "MATCHED")
    assert (outcome.matching.matched, outcome.matching.total) == (1, 1)  # the LLM call, in the agent's order
    assert len(outcome.requests) == 2
    assert outcome.recorded_requests == 2
    assert [r.background for r in outcome.requests].count(True) == 1
    assert outcome.to_dict()["requests"]["served"] == 2
    network = {"policy": "sealed", "allowed_hosts": [], "allowed_commands": [], "not_sealed": []}
    assert outcome.to_dict()["network"] == network


def test_an_unrecorded_request_is_refused_by_name_and_diverges_though_the_library_swallowed_it(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    bundle = recorded(tmp_path, server)
    sent = len(server.requests)
    outcome = replay_entrypoint(bundle, weather_agent(server, query="?v=2"))
    assert len(server.requests) == sent
    assert outcome.execution.status == "COMPLETED"  # the thread caught the refusal...
    assert outcome.result["prices"] == ["failed"]
    assert outcome.exit_code == 1  # ...the replay diverged all the same
    assert outcome.matching.code == "request_not_recorded"
    root = server.base_url.removesuffix("/v1")
    assert f"GET {root}/model_prices.json?v=2 from a thread without the replay's context" in (
        outcome.matching.message or ""
    )
    assert outcome.matching.diagnostic is not None
    assert outcome.matching.diagnostic.difference is not None
    assert outcome.matching.diagnostic.difference.path == "$.url"


def test_a_request_made_more_often_than_recorded_is_refused(tmp_path: Path, server: LocalOpenAI) -> None:
    bundle = recorded(tmp_path, server)
    _, http = clients(server)
    root = server.base_url.removesuffix("/v1")
    with ReplaySession.from_trace(bundle) as session:
        http.get(f"{root}/health")
        with pytest.raises(Exception, match="HTTP request not in the recording"):
            http.get(f"{root}/health")
    assert session.divergence is not None
    assert session.divergence.code == "request_not_recorded"
    assert "not this often" in str(session.divergence)


@pytest.mark.parametrize(
    ("method", "path", "body", "llm"),
    [
        ("POST", "/v1/chat/completions", {"model": "gpt-4o-mini", "messages": []}, True),
        ("POST", "/v1/messages", {"model": "claude", "messages": []}, True),
        ("POST", "/v1beta/models/gemini-2.0-flash:generateContent", {"contents": []}, True),
        ("POST", "/model/anthropic.claude/converse", {"messages": []}, True),
        ("POST", "/api/chat", {"model": "llama3"}, True),
        ("POST", "/v1/embeddings?x=1", {"input": "a"}, True),
        ("GET", "/v1/models", None, False),
        ("GET", "/BerriAI/litellm/main/model_prices_and_context_window.json", None, False),
        ("POST", "/mcp", {"jsonrpc": "2.0", "method": "tools/call", "id": 1}, False),
        ("POST", "/v1/traces", {"resourceSpans": []}, False),
        ("POST", "/v1/chat/completions", None, False),
    ],
)
def test_the_llm_request_rule(method: str, path: str, body: Any, llm: bool) -> None:
    assert is_llm_request(method, path, body) is llm


def test_inspect_counts_them_and_diff_lines_them_up_whenever_they_came(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    early = recorded(tmp_path, server, "early", background_first=True)
    late = recorded(tmp_path, server, "late")
    shown = subprocess.run(
        [str(STEPFORK), "inspect", str(late)], capture_output=True, text=True, check=False, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    assert "2 HTTP requests outside the agent's order" in shown.stdout
    diffed = subprocess.run(
        [str(STEPFORK), "diff", str(early), str(late), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    data = json.loads(diffed.stdout)
    kinds = {(step["step_type"], step["kind"]) for step in data["steps"]}
    assert ("http", "added") not in kinds
    assert ("http", "removed") not in kinds
    assert sum(1 for step in data["steps"] if step["step_type"] == "http") == 2


AGENT = """
import os
import threading

import httpx
import openai

from stepfork.integrations.httpx import instrument_httpx
from stepfork.integrations.openai import instrument_openai

BASE = os.environ["AGENT_BASE_URL"]


def run_agent():
    with (
        openai.OpenAI(base_url=BASE, api_key="sk-local", max_retries=0) as client,
        httpx.Client() as http,
    ):
        instrument_openai(client)
        instrument_httpx(http)
        thread = threading.Thread(target=lambda: http.get(BASE.removesuffix("/v1") + "/model_prices.json"))
        thread.start()
        thread.join()
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "What is the weather in Paris?"}]
        )
        return reply.choices[0].message.content
"""


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_cli_report_counts_background_requests_and_names_the_network(
    tmp_path: Path, server: LocalOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    (tmp_path / "bg_agent.py").write_text(AGENT)
    monkeypatch.setenv("AGENT_BASE_URL", server.base_url)
    env = dict(os.environ)
    bundle = tmp_path / "run.sftrace"
    sys.path.insert(0, str(tmp_path))
    try:
        from bg_agent import run_agent  # type: ignore[import-not-found]

        with record("bg", output=bundle) as session:
            session.set_output(run_agent())
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("bg_agent", None)
    sent = len(server.requests)
    args = [str(STEPFORK), "replay", str(bundle), "--entrypoint", "bg_agent:run_agent", "--verbose"]
    done = subprocess.run(
        args, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Network       sealed\n" in done.stdout
    assert "  HTTP requests: 1 served (of 1 recorded): 1 by a background thread\n" in done.stdout
    assert "/model_prices.json (step 1, background thread)" in done.stdout
    assert "Recorded behavior: MATCHED" in done.stdout
    allowed = subprocess.run(
        [*args, "--allow-host", f"127.0.0.1:{server.port}", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    report = json.loads(allowed.stdout)
    allowed = [f"127.0.0.1:{server.port}"]
    network = {"policy": "sealed", "allowed_hosts": allowed, "allowed_commands": [], "not_sealed": []}
    assert report["network"] == network
    assert report["requests"]["served"] == 1
    assert report["requests"]["background"] == 1
    assert len(server.requests) == sent  # allowed, but served from the recording all the same


def test_a_bundle_recorded_before_http_calls_existed_replays_its_requests_in_order(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    """Before issue 29 the capture recorded every request as an LLM call in the agent's order (input
    ``{"method", "path", "headers", "body"}``, model ``GET /health``): such a bundle still replays."""
    from stepfork.trace import save_trace
    from stepfork.trace.models import EVENT_ADAPTER

    def agent() -> Any:
        _, http = clients(server)
        return http.get(server.base_url.removesuffix("/v1") + "/health").json()["status"]

    new = tmp_path / "new.sftrace"
    with record("old-form", output=new) as session:
        session.set_output(agent())
    trace = load_trace(new)
    events = []
    for event in trace.events:
        data = event.model_dump(mode="json")
        if data["type"] in ("tool_call", "tool_result"):
            name = data.pop("name")
            data["model"] = name.split(" ", 1)[1].split(" ", 1)[0] + " /health"
            if data["type"] == "tool_call":
                data.update(type="llm_request", provider="127.0.0.1")
                data["input"] = {"method": "GET", "path": "/health", "headers": {}, "body": None}
            else:
                data["type"] = "llm_response"
        events.append(EVENT_ADAPTER.validate_python(data))
    old = tmp_path / "old.sftrace"
    save_trace(trace.model_copy(update={"events": events}), old)
    assert [str(e.type) for e in load_trace(old).events][1:3] == ["llm_request", "llm_response"]
    sent = len(server.requests)
    outcome = replay_entrypoint(old, agent)
    assert (outcome.exit_code, outcome.matching.status, outcome.behavior.status) == (0, "COMPLETE", "MATCHED")
    assert [call.label for call in outcome.calls] == ["127.0.0.1/GET /health"]
    assert len(server.requests) == sent
