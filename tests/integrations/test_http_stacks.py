"""The HTTP capture beyond httpx (issue 30): requests and urllib3 (urllib3's ``HTTPConnectionPool.urlopen``),
aiohttp (a client middleware) and the standard library's urllib.request (``do_open``; NEWCOMER3 finding
13), recorded against an OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py: fresh ids and
request ids per response, JSON and chunked SSE) and replayed frozen with the server stopped. Every stack
records the same shapes, so a recording made through one replays through another."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests
import urllib3
from local_openai import LocalOpenAI, serving

from stepfork.integrations.aiohttp import instrument_aiohttp
from stepfork.integrations.httpx import instrument_httpx
from stepfork.integrations.urllib import instrument_urllib
from stepfork.integrations.urllib3 import instrument_urllib3
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import load_trace, record

instrument_urllib3()
instrument_aiohttp()


@pytest.fixture(scope="module", autouse=True)
def _urllib_captured() -> Iterator[None]:
    """urllib.request captured for this module only: other tests of the worker use urlopen as the client
    Stepfork does not capture (the network seal's tests)."""
    original = urllib.request.AbstractHTTPHandler.do_open
    instrument_urllib()
    yield
    urllib.request.AbstractHTTPHandler.do_open = original  # type: ignore[method-assign]


CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}]}


def stream_body(city: str) -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "stream": True,
        "stream_options": {"include_usage": True},  # as the SDKs ask for the usage chunk
        "messages": [{"role": "user", "content": f"Weather in {city}?"}],
    }


def sse_text(lines: list[str]) -> str:
    """The streamed answer of Chat Completions SSE lines."""
    text = ""
    for line in lines:
        if line.startswith("data: {"):
            chunk = json.loads(line[6:])
            text += "".join(c["delta"].get("content") or "" for c in chunk["choices"])
    return text


def with_requests(base: str, city: str = "Lyon") -> tuple[str, str, str]:
    with requests.Session() as session:
        answer = session.post(f"{base}/chat/completions", json=CHAT, headers={"Authorization": "Bearer sk-1"})
        with session.post(f"{base}/chat/completions", json=stream_body(city), stream=True) as streamed:
            lines = [line for line in streamed.iter_lines(decode_unicode=True) if line]
        health = session.get(f"{base}/health").json()["status"]
    return answer.json()["choices"][0]["message"]["content"], sse_text(lines), health


def with_urllib3(base: str, city: str = "Lyon") -> tuple[str, str, str]:
    pool = urllib3.PoolManager()
    answer = pool.request("POST", f"{base}/chat/completions", json=CHAT).json()
    streamed = pool.request("POST", f"{base}/chat/completions", json=stream_body(city), preload_content=False)
    lines = b"".join(streamed.stream(64)).decode().split("\n")
    streamed.release_conn()
    health = pool.request("GET", f"{base}/health").json()["status"]
    pool.clear()
    return answer["choices"][0]["message"]["content"], sse_text(lines), health


def with_urllib(base: str, city: str = "Lyon") -> tuple[str, str, str]:
    def post(body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-1"}
        return urllib.request.urlopen(urllib.request.Request(f"{base}/chat/completions", data, headers))

    with post(CHAT) as answer:
        content = json.load(answer)["choices"][0]["message"]["content"]
    with post(stream_body(city)) as streamed:
        lines = [line.decode().strip() for line in streamed]
    with urllib.request.urlopen(f"{base}/health") as health:
        status = json.load(health)["status"]
    return content, sse_text(lines), status


def with_aiohttp(base: str, city: str = "Lyon") -> tuple[str, str, str]:
    async def run() -> tuple[str, str, str]:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{base}/chat/completions", json=CHAT) as answer:
                content = (await answer.json())["choices"][0]["message"]["content"]
            async with session.post(f"{base}/chat/completions", json=stream_body(city)) as streamed:
                lines = [line.decode().strip() async for line in streamed.content]
            async with session.get(f"{base}/health") as health:
                status = (await health.json())["status"]
        return content, sse_text(lines), status

    return asyncio.run(run())


def with_httpx(base: str, city: str = "Lyon") -> tuple[str, str, str]:
    with instrument_httpx(httpx.Client()) as client:
        answer = client.post(f"{base}/chat/completions", json=CHAT).json()
        with client.stream("POST", f"{base}/chat/completions", json=stream_body(city)) as streamed:
            lines = list(streamed.iter_lines())
        health = client.get(f"{base}/health").json()["status"]
    return answer["choices"][0]["message"]["content"], sse_text(lines), health


STACKS: dict[str, Callable[..., tuple[str, str, str]]] = {
    "requests": with_requests,
    "urllib3": with_urllib3,
    "aiohttp": with_aiohttp,
    "httpx": with_httpx,
    "urllib": with_urllib,
}


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def recorded(bundle: Path, agent: Callable[..., Any], server: LocalOpenAI) -> Any:
    with record("stacks", output=bundle):
        live = agent(server.base_url)
    return live


def replayed(bundle: Path, agent: Callable[..., Any], base: str, **kwargs: Any) -> Any:
    with ReplaySession.from_trace(bundle) as session:
        result = agent(base, **kwargs)
    session.verify_complete()
    return result


@pytest.mark.parametrize("stack", ["requests", "urllib3", "aiohttp", "urllib"])
def test_a_stack_records_json_sse_and_http_calls_and_replays_them_with_the_server_stopped(
    stack: str, server: LocalOpenAI, bundle: Path
) -> None:
    agent = STACKS[stack]
    live = recorded(bundle, agent, server)
    assert live == ("It is 21 degrees and sunny in Paris.", "It is 21 degrees and sunny in Lyon.", "ok")
    base, sent = server.base_url, len(server.requests)
    assert sent == 3
    server.server.shutdown()  # type: ignore[union-attr]
    assert replayed(bundle, agent, base) == live
    assert len(server.requests) == sent
    events = load_trace(bundle).events
    requests_ = [e for e in events if str(e.type) == "llm_request"]
    assert [(e.provider, e.model) for e in requests_] == [("127.0.0.1", "gpt-4o-mini")] * 2
    assert requests_[0].input["path"] == "/v1/chat/completions"
    assert requests_[0].input["headers"] == {}  # Authorization is never recorded
    responses = [e for e in events if str(e.type) == "llm_response"]
    assert all(e.total_tokens and e.prompt_tokens for e in responses)
    assert responses[1].output["sse"]["end"] == "finished"
    assert responses[1].output["sse"]["events"][-1] == {"text": "[DONE]"}
    assert [e.name for e in events if str(e.type) == "tool_call"] == [f"http GET {base}/health"]


@pytest.mark.parametrize(
    ("recorded_by", "replayed_by"),
    [
        (a, b)
        for a in ("requests", "aiohttp", "httpx", "urllib")
        for b in ("requests", "aiohttp", "httpx", "urllib3", "urllib")
        if a != b
    ],
)
def test_a_recording_replays_through_another_stack(
    recorded_by: str, replayed_by: str, server: LocalOpenAI, bundle: Path
) -> None:
    live = recorded(bundle, STACKS[recorded_by], server)
    sent = len(server.requests)
    assert replayed(bundle, STACKS[replayed_by], server.base_url) == live
    assert len(server.requests) == sent


@pytest.mark.parametrize("stack", ["requests", "aiohttp", "urllib"])
def test_a_changed_prompt_diverges_at_its_path(stack: str, server: LocalOpenAI, bundle: Path) -> None:
    recorded(bundle, STACKS[stack], server)
    sent = len(server.requests)
    with pytest.raises(ReplayMismatchError) as caught, ReplaySession.from_trace(bundle):
        STACKS[stack](server.base_url, city="Nice")
    assert caught.value.code == "input_diverged"
    assert caught.value.path == "$.body.messages[0].content"
    assert len(server.requests) == sent


class RequestsTransport(httpx.BaseTransport):
    """An httpx transport sending through requests (as some SDK adapters do): one request, two stacks."""

    def __init__(self) -> None:
        self.session = requests.Session()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        sent = self.session.request(
            request.method, str(request.url), data=request.read(), headers=dict(request.headers)
        )
        return httpx.Response(sent.status_code, headers=dict(sent.headers), content=sent.content)


def test_a_request_sent_through_two_captured_stacks_is_one_call(server: LocalOpenAI, bundle: Path) -> None:
    def agent(base: str) -> Any:
        with instrument_httpx(httpx.Client(transport=RequestsTransport())) as client:
            return client.post(f"{base}/chat/completions", json=CHAT).json()["choices"][0]["message"][
                "content"
            ]

    live = recorded(bundle, agent, server)
    assert [str(e.type) for e in load_trace(bundle).events].count("llm_request") == 1
    assert replayed(bundle, agent, server.base_url) == live


def test_a_stream_the_caller_leaves_early_replays_up_to_where_it_stopped(
    server: LocalOpenAI, bundle: Path
) -> None:
    def agent(base: str) -> Any:
        with requests.post(f"{base}/chat/completions", json=stream_body("Lyon"), stream=True) as streamed:
            lines = streamed.iter_lines(decode_unicode=True)
            return json.loads(next(line for line in lines if line.startswith("data: {"))[6:])

    live = recorded(bundle, agent, server)
    output = next(e.output for e in load_trace(bundle).events if str(e.type) == "llm_response")
    assert output["sse"]["end"] == "consumer_closed"
    assert replayed(bundle, agent, server.base_url) == live


def test_a_transport_error_is_recorded_and_raised_again(bundle: Path) -> None:
    def agent(base: str) -> str:
        try:
            requests.post(f"{base}/chat/completions", json=CHAT, timeout=5)
        except requests.ConnectionError as exc:
            return type(exc).__name__
        return "answered"

    with serving() as gone:
        base = gone.base_url
    with record("stacks", output=bundle):
        assert agent(base) == "ConnectionError"
    assert replayed(bundle, agent, base) == "ConnectionError"


def test_google_genai_async_through_aiohttp_replays_with_the_server_stopped(bundle: Path) -> None:
    import sys

    from google import genai

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "google_genai_agent"))
    from gemini_server import serve

    srv, gemini = serve()
    base = f"http://127.0.0.1:{srv.server_address[1]}"

    def agent(base: str) -> tuple[str, str, bool]:
        async def run() -> tuple[str, str, bool]:
            client = genai.Client(api_key="local-key", http_options={"base_url": base})
            answer = await client.aio.models.generate_content(
                model="gemini-2.5-flash", contents="Sky in Oslo?"
            )
            text = ""
            async for chunk in await client.aio.models.generate_content_stream(
                model="gemini-2.5-flash", contents="Forecast for Oslo?"
            ):
                text += chunk.text or ""
            through_aiohttp = client._api_client._use_aiohttp()
            await client.aio.aclose()
            return answer.text or "", text, through_aiohttp

        return asyncio.run(run())

    try:
        with record("genai-async", output=bundle):
            live = agent(base)
    finally:
        srv.shutdown()
        srv.server_close()
    assert live[2] is True
    assert live[0].startswith("Tomorrow in Oslo")
    sent = len(gemini.requests)
    assert replayed(bundle, agent, base) == live
    assert len(gemini.requests) == sent
    events = load_trace(bundle).events
    calls = [(e.provider, e.model) for e in events if str(e.type) == "llm_request"]
    assert calls == [("google", "gemini-2.5-flash")] * 2
    assert all(e.total_tokens for e in events if str(e.type) == "llm_response")
    assert json.loads((bundle / "sdk-versions.json").read_text()) == {"google-genai": genai.__version__}


@pytest.mark.parametrize("stack", ["requests", "aiohttp"])
def test_a_request_from_a_thread_without_the_session_is_an_http_call(
    stack: str, server: LocalOpenAI, bundle: Path
) -> None:
    """One rule for every stack (issue 29): a thread started without the context is not the agent's, so
    its request, LLM call or not, is an ``http`` call served by its request in any order."""

    def agent(base: str) -> Any:
        answers: list[Any] = []
        worker = threading.Thread(target=lambda: answers.append(STACKS[stack](base)[0]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # OrphanCallWarning: the point of the test
            worker.start()
            worker.join()
        return answers[0]

    live = recorded(bundle, agent, server)
    names = [e.name for e in load_trace(bundle).events if str(e.type) == "tool_call"]
    assert names.count(f"http POST {server.base_url}/chat/completions") == 2
    assert not [e for e in load_trace(bundle).events if str(e.type) == "llm_request"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert replayed(bundle, agent, server.base_url) == live
