"""A realistic OpenAI-compatible API over real HTTP on 127.0.0.1 (a vLLM, Ollama or LiteLLM proxy stand-in).

Every response is what a real server sends: a fresh ``chatcmpl-...`` id and ``created`` time per completion,
a fresh ``x-request-id``, ``openai-processing-ms`` and the ``Date`` header, usage counts; ``"stream":
true`` answers with Server-Sent Events in chunked transfer encoding (the usage in the last chunk, then
``[DONE]``). It also serves
plain resources an agent's libraries fetch: ``GET /model_prices.json`` (a model-cost map, answered ``503``
with ``retry-after: 0`` the first ``unavailable`` times, as a CDN under load) and ``GET /health``. Every
request is counted (``requests``), so a test can prove a replay sent nothing.

Run it on its own with ``python local_openai.py [UNAVAILABLE]`` (a free port); tests use :func:`serving`.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class LocalOpenAI:
    """The server's state: what it answers and what it received.

    Attributes:
        requests: ``(method, path)`` of every request received, in order.
        unavailable: how many times ``/model_prices.json`` answers 503 before it answers 200.
    """

    def __init__(self, unavailable: int = 0) -> None:
        self.requests: list[tuple[str, str]] = []
        self.unavailable = unavailable
        self.lock = threading.Lock()
        self.server: http.server.ThreadingHTTPServer | None = None

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
        """A Chat Completions response to ``body``: the answer names the city the last user message asks
        about, so a changed prompt changes the answer."""
        question = next(
            (m.get("content") for m in reversed(body.get("messages") or []) if m.get("role") == "user"), ""
        )
        city = str(question).rstrip("?").split()[-1] if question else "nowhere"
        answer = f"It is 21 degrees and sunny in {city}."
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": f"{body.get('model', 'gpt-4o-mini')}-2024-07-18",
            "system_fingerprint": f"fp_{uuid.uuid4().hex[:10]}",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 9, "total_tokens": prompt + 9},
        }


def _handler(state: LocalOpenAI) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers

        def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)  # adds Date and Server
            self.send_header("content-type", "application/json")
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
            elif path.endswith("/health"):
                self._send(200, {"status": "ok", "checked_at": time.time()})
            elif path.endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})

        def _stream(self, completion: dict[str, Any]) -> None:
            """The completion as Chat Completions SSE chunks (``Transfer-Encoding: chunked``, one HTTP
            chunk per event, as real servers flush them), the usage in a last chunk and ``[DONE]``."""
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
            self.end_headers()
            base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
            text = completion["choices"][0]["message"]["content"]
            words = text.split(" ")
            pieces = [{"role": "assistant", "content": ""}] + [
                {"content": w if i == 0 else f" {w}"} for i, w in enumerate(words)
            ]
            chunk = {**base, "object": "chat.completion.chunk"}
            events = [{**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in pieces]
            events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            events.append({**chunk, "choices": [], "usage": completion["usage"]})
            for payload in [*(json.dumps(e) for e in events), "[DONE]"]:
                data = f"data: {payload}\n\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def do_POST(self) -> None:
            self._note()
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.split("?", 1)[0].endswith("/chat/completions"):
                if body.get("stream"):
                    self._stream(state.completion(body))
                else:
                    self._send(200, state.completion(body))
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
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    with serving(int(sys.argv[1]) if len(sys.argv) > 1 else 0) as running:
        print(f"OpenAI-compatible API on {running.base_url}", flush=True)
        threading.Event().wait()
