"""A boundary handler may serve a call without running its body (``BoundaryHandler``: "run or replace"):
every HTTP capture then hands back the response rebuilt from what the handler served, as on replay, never
``IndexError: list index out of range`` (NEWCOMER3 finding 4 failed there: a handler that is neither a
replay nor a recording took the path that expected the body to have run). Nothing is sent: the URL's port
has no server, so a request that went out would fail to connect."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx2
import pytest

from stepfork.integrations.aiohttp import instrument_aiohttp
from stepfork.integrations.httpx import instrument_httpx
from stepfork.integrations.urllib3 import instrument_urllib3
from stepfork.trace.boundary import BoundaryCall, using_handler

T = TypeVar("T")
URL = "http://127.0.0.1:9/v1/chat/completions"
BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
ANSWER = {"id": "chatcmpl-served", "object": "chat.completion", "choices": []}


class Serving:
    """A handler that answers every call itself, from a recorded HTTP output, and never runs a body."""

    is_replay = False

    def __init__(self) -> None:
        self.calls: list[BoundaryCall] = []

    def _served(self, call: BoundaryCall) -> Any:
        self.calls.append(call)
        return {"status": 200, "headers": {"content-type": "application/json"}, "json": ANSWER}

    def handle(self, call: BoundaryCall, body: Callable[[], T], *, orphan: bool = False) -> Any:
        return self._served(call)

    async def ahandle(
        self, call: BoundaryCall, body: Callable[[], Awaitable[T]], *, orphan: bool = False
    ) -> Any:
        return self._served(call)


def _httpx() -> Any:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("the body ran: the request was sent")

    with instrument_httpx(httpx2.Client(transport=httpx2.MockTransport(refuse))) as client:
        return client.post(URL, json=BODY).json()


def _httpx_async() -> Any:
    async def refuse(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("the body ran: the request was sent")

    async def post() -> Any:
        async with instrument_httpx(httpx2.AsyncClient(transport=httpx2.MockTransport(refuse))) as client:
            return (await client.post(URL, json=BODY)).json()

    return asyncio.run(post())


def _requests() -> Any:
    import requests

    instrument_urllib3()
    return requests.post(URL, json=BODY, timeout=5).json()


def _aiohttp() -> Any:
    import aiohttp

    instrument_aiohttp()

    async def post() -> Any:
        async with aiohttp.ClientSession() as session, session.post(URL, json=BODY) as answer:
            return await answer.json()

    return asyncio.run(post())


@pytest.mark.parametrize("post", [_httpx, _httpx_async, _requests, _aiohttp], ids=lambda f: f.__name__[1:])
def test_a_call_the_handler_served_is_the_response_it_served(post: Callable[[], Any]) -> None:
    handler = Serving()
    with using_handler(handler):  # type: ignore[arg-type]
        assert post() == ANSWER
    assert [call.kind for call in handler.calls] == ["llm"]
