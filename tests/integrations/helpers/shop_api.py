"""A shop's REST API over real HTTP on 127.0.0.1, what an agent's tools call (`requests`, httpx).

``GET /orders/ID`` answers the order (``checked_at``: the server's clock); ``POST`` to any path (``/refunds``,
``/tickets``) answers ``201`` with a fresh id (``re_...``), the ``created`` time and the JSON body echoed;
any other ``GET`` (``/flags``) answers a feature-flag document. Every response carries ``Date`` and a fresh
``x-request-id``, as real APIs do, and every request is counted (``requests``), so a test can prove a replay
sent nothing.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class ShopApi:
    """The API's state; ``requests``: ``(method, path)`` of every request received, in order."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        state = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)  # Date and Server, as real servers
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with state.lock:
                    state.requests.append(("GET", self.path))
                if self.path.startswith("/orders/"):
                    order = self.path.rsplit("/", 1)[1]
                    self._send(200, {"id": order, "status": "delivered", "checked_at": time.time()})
                else:
                    self._send(200, {"refunds_enabled": True})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
                with state.lock:
                    state.requests.append(("POST", self.path))
                created = {"id": f"re_{uuid.uuid4().hex[:24]}", "created": int(time.time()), **body}
                self._send(201, {**created, "status": "succeeded"})

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def count(self, method: str, path: str) -> int:
        """How many ``method`` requests to ``path`` were received."""
        with self.lock:
            return self.requests.count((method, path))


@contextmanager
def serving() -> Iterator[ShopApi]:
    """A running :class:`ShopApi`, stopped on exit."""
    api = ShopApi()
    thread = threading.Thread(target=api.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()
