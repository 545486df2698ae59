"""A local fake OpenAI API over real HTTP on 127.0.0.1 (for ``weather_script.py``; no network).

It serves the responses of ``examples/openai_agent/fake_openai.py`` (Chat Completions JSON and SSE).
``python fake_server.py PORT`` runs it in the foreground; tests use :func:`serve` in a thread.
"""

from __future__ import annotations

import http.server
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "openai_agent"))

import httpx2
from fake_openai import FakeOpenAI


def handler_for(fake: FakeOpenAI) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            request = httpx2.Request("POST", f"http://fake{self.path}", content=body)
            response = fake(request)
            self.send_response(response.status_code)
            for name, value in response.headers.items():
                if name.lower() not in ("content-length", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("content-length", str(len(response.content)))
            self.end_headers()
            self.wfile.write(response.content)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def serve(port: int = 0) -> tuple[http.server.ThreadingHTTPServer, FakeOpenAI]:
    """Start the server in a daemon thread; return it (``server_address``) and the fake (``requests``)."""
    fake = FakeOpenAI()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler_for(fake))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, fake


if __name__ == "__main__":
    server, _ = serve(int(sys.argv[1]) if len(sys.argv) > 1 else 8765)
    print(f"fake OpenAI API on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    threading.Event().wait()
