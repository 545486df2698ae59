"""A realistic OpenAI-compatible API over real HTTP on 127.0.0.1 (a vLLM, Ollama or LiteLLM proxy stand-in).

Every response is what a real server sends: a fresh ``chatcmpl-...`` id and ``created`` time per completion,
a fresh ``x-request-id``, ``openai-processing-ms`` and the ``Date`` header, usage counts. It serves Chat
Completions and Responses, as JSON and as Server-Sent Events (``stream: true``, in chunked transfer
encoding, one HTTP chunk per event), with tool calls: what it
answers is the scripted model of openai_turns.py, so an agent framework's loop (tools, handoffs, a final
answer tool, smolagents' code) runs to its end. ``POST /traces/ingest`` takes the OpenAI Agents SDK's trace
export (``204``), as OpenAI's endpoint does. It also serves
plain resources an agent's libraries fetch: ``GET /model_prices.json`` (a model-cost map, answered ``503``
with ``retry-after: 0`` the first ``unavailable`` times, as a CDN under load), ``GET /health``, and
``GET /long-poll?touch=PATH``, which creates the file PATH (the program may then exit, sure the request
is in flight) and answers only when the server stops (a long poll still waiting at exit), and a REST
service's: ``GET /flags`` (feature flags, with the server's ``updated_at`` clock) and ``POST /audit`` and
``POST /heartbeat`` (a fresh event ``id`` and the JSON body echoed as ``received``). Every
request is counted (``requests``), so a test can prove a replay sent nothing.

Run it on its own with ``python local_openai.py [UNAVAILABLE]`` (a free port); tests use :func:`serving`.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai_turns


class LocalOpenAI:
    """The server's state: what it answers and what it received.

    Attributes:
        requests: ``(method, path)`` of every request received, in order.
        unavailable: how many times ``/model_prices.json`` answers 503 before it answers 200.
        omit: keys left out of each Chat Completions message (``{"annotations"}``: an older API release).
    """

    def __init__(self, unavailable: int = 0) -> None:
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[tuple[str, Any]] = []  # (path, JSON body) of every POST
        self.unavailable = unavailable
        self.omit: set[str] = set()  # keys left out of each Chat Completions message (an older API's shape)
        self.lock = threading.Lock()
        self.server: http.server.ThreadingHTTPServer | None = None
        self.stopping = threading.Event()  # set when the server stops: /long-poll answers then

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the OpenAI base URL."""
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.server_address[1])

    def count(self, path_suffix: str = "") -> int:
        """How many requests whose path ends with ``path_suffix`` were received."""
        with self.lock:
            return sum(1 for _, path in self.requests if path.split("?", 1)[0].endswith(path_suffix))

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """A Chat Completions response to ``body`` (openai_turns.py: the tools it offers are called, else
        the answer names the city the last user message asks about, so a changed prompt changes it), its
        message without the keys in :attr:`omit` (``annotations``: the API before March 2025)."""
        answer = openai_turns.chat_completion(body)
        for choice in answer["choices"]:
            for key in self.omit:
                choice["message"].pop(key, None)
        return answer

    def posted(self, path_suffix: str) -> list[Any]:
        """The JSON bodies of the POST requests whose path ends with ``path_suffix``, in order."""
        with self.lock:
            return [body for path, body in self.bodies if path.split("?", 1)[0].endswith(path_suffix)]


def _handler(state: LocalOpenAI) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers

        def _send(
            self, status: int, payload: Any, extra: dict[str, str] | None = None, *, sse: bytes | None = None
        ) -> None:
            data = json.dumps(payload).encode() if sse is None else sse
            self.send_response(status)  # adds Date and Server
            kind = "application/json" if sse is None else "text/event-stream; charset=utf-8"
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
            self.send_header("openai-processing-ms", str(100 + uuid.uuid4().int % 400))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _note(self) -> int:
            with state.lock:
                state.requests.append((self.command, self.path))
                return len(state.requests)

        def do_GET(self) -> None:
            self._note()
            path = self.path.split("?", 1)[0]
            if path.endswith("/model_prices.json"):
                with state.lock:
                    served = sum(1 for _, p in state.requests if p.split("?", 1)[0] == path)
                if served <= state.unavailable:
                    self._send(503, {"error": "unavailable"}, {"retry-after": "0"})
                else:
                    self._send(200, {"local-model": {"input_cost_per_token": 0.0, "max_tokens": 8192}})
            elif path.endswith("/long-poll"):
                touch = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("touch")
                if touch:
                    open(touch[0], "w").close()
                state.stopping.wait(120)
                self._send(200, {"events": []})
            elif path.endswith("/health"):
                self._send(200, {"status": "ok", "checked_at": time.time()})
            elif path.endswith("/flags"):  # a feature-flag service, polled (``?since=`` a clock second)
                self._send(200, {"flags": {"new_checkout": True}, "updated_at": time.time()})
            elif path.endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})

        def _stream(self, sse: bytes) -> None:
            """Server-Sent Events in ``Transfer-Encoding: chunked``, one HTTP chunk per event, as real
            servers flush them."""
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
            self.end_headers()
            for event in sse.split(b"\n\n")[:-1]:
                data = event + b"\n\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def do_POST(self) -> None:
            self._note()
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?", 1)[0]
            with state.lock:
                state.bodies.append((path, body))
            streamed = bool(body.get("stream"))
            if path.endswith("/chat/completions") and streamed:
                self._stream(openai_turns.sse(openai_turns.chat_chunks(body), named=False))
            elif path.endswith("/chat/completions"):
                self._send(200, state.completion(body))
            elif path.endswith("/responses") and streamed:
                self._send(200, None, sse=openai_turns.sse(openai_turns.response_events(body), named=True))
            elif path.endswith("/responses"):
                self._send(200, openai_turns.response(body))
            elif path.endswith(("/audit", "/heartbeat")):  # a REST service: a new event id, the body echoed
                self._send(200, {"id": f"evt_{uuid.uuid4().hex}", "received": body})
            elif path.endswith("/traces/ingest"):
                self.send_response(204)
                self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
                self.end_headers()
            else:
                self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


OPENED: list[Any] = []
"""Clients a test made against the server (:func:`kept`), closed after each test by tests/integrations/
conftest.py: their keep-alive sockets would otherwise be left to the garbage collector."""


def kept(client: Any) -> Any:
    """``client`` (anything with ``close()``), closed after the test that made it; returns it."""
    OPENED.append(client)
    return client


@contextmanager
def serving(unavailable: int = 0) -> Iterator[LocalOpenAI]:
    """Run a :class:`LocalOpenAI` on 127.0.0.1 (a free port) in a daemon thread for the ``with`` block."""
    state = LocalOpenAI(unavailable)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.server = server
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stopping.set()
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    with serving(int(sys.argv[1]) if len(sys.argv) > 1 else 0) as running:
        print(f"OpenAI-compatible API on {running.base_url}", flush=True)
        threading.Event().wait()
