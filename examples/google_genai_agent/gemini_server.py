"""A local Gemini API (``generativelanguage.googleapis.com``'s shapes) over real HTTP on 127.0.0.1.

What ``genai_agent.py`` calls, answered as the Gemini API answers (v1beta):

- ``POST /v1beta/models/{model}:generateContent``: a ``GenerateContentResponse`` JSON body. When the
  request declares tools and holds no ``functionResponse`` yet, the model asks for the first function
  with ``{"city": <the last word of the prompt>}`` (a ``functionCall`` part, ``finishReason: STOP``); else
  it answers in text, from the function's response when there is one.
- ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``: the same answer as Server-Sent Events, one
  chunk per few words (``data: {...}\\r\\n\\r\\n``), the last one with ``finishReason`` and the final
  ``usageMetadata``.

Every response has a fresh ``responseId``, ``usageMetadata`` counts, and the headers a Google front end
sends (``date``, ``server``, ``server-timing``, ``vary``). Every request is counted (``requests``), so a test
proves a replay sent nothing. ``python gemini_server.py [PORT]`` runs it in the foreground; tests use
:func:`serve`.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import sys
import threading
from typing import Any


class Gemini:
    """What the server received: ``requests`` holds ``(method, path, body)`` in order."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
        """The parts the model answers ``body`` with, and the prompt's token count."""
        contents = body.get("contents") or []
        words = sum(len(str(p.get("text", "")).split()) for c in contents for p in c.get("parts") or [])
        responses = [
            p["functionResponse"] for c in contents for p in c.get("parts") or [] if "functionResponse" in p
        ]
        functions = [f for t in body.get("tools") or [] for f in t.get("functionDeclarations") or []]
        prompt = next((p.get("text") for c in contents for p in c.get("parts") or [] if p.get("text")), "")
        city = str(prompt).rstrip("?.!").split()[-1] if prompt else "nowhere"
        if functions and not responses:
            return [{"functionCall": {"name": functions[0]["name"], "args": {"city": city}}}], words + 40
        if responses:
            weather = responses[-1].get("response") or {}
            weather = weather.get("result", weather)  # the SDK sends a function's return as {"result": ...}
            degrees, sky = weather.get("temperature_c", "?"), weather.get("conditions", "?")
            text = f"It is {degrees} degrees and {sky} in {city}."
            return [{"text": text}], words + 60
        return [{"text": f"Tomorrow in {city}: mild, light wind, no rain expected."}], words


def _response_id() -> str:
    return base64.urlsafe_b64encode(os.urandom(16)).decode("ascii").rstrip("=")


def _usage(prompt: int, output: int) -> dict[str, Any]:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output + 17,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        "thoughtsTokenCount": 17,
    }


def handler_for(state: Gemini) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _head(self, status: int, content_type: str, extra: dict[str, str]) -> None:
            self.send_response(status)  # Date and Server
            self.send_header("content-type", content_type)
            self.send_header("vary", "Origin, X-Origin, Referer")
            self.send_header("server-timing", f"gfet4t7; dur={100 + int.from_bytes(os.urandom(1), 'big')}")
            self.send_header("x-content-type-options", "nosniff")
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
            with state.lock:
                state.requests.append(("POST", self.path, body))
            path = self.path.split("?", 1)[0]
            model = path.rsplit("/", 1)[-1].split(":", 1)[0]
            parts, prompt = state.answer(body)
            output = sum(len(str(p.get("text", "")).split()) or 6 for p in parts)
            if path.endswith(":generateContent"):
                payload = {
                    "candidates": [
                        {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
                    ],
                    "usageMetadata": _usage(prompt, output),
                    "modelVersion": model,
                    "responseId": _response_id(),
                }
                data = json.dumps(payload, indent=2).encode()
                self._head(200, "application/json; charset=UTF-8", {"content-length": str(len(data))})
                self.wfile.write(data)
            elif path.endswith(":streamGenerateContent"):
                self._stream(parts, prompt, output, model)
            else:
                data = json.dumps(
                    {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}
                ).encode()
                self._head(404, "application/json; charset=UTF-8", {"content-length": str(len(data))})
                self.wfile.write(data)

        def _stream(self, parts: list[dict[str, Any]], prompt: int, output: int, model: str) -> None:
            self._head(200, "text/event-stream", {"transfer-encoding": "chunked"})
            identity = _response_id()
            words = str(parts[0].get("text", "")).split(" ")
            pieces = [
                " ".join(words[i : i + 3]) + (" " if i + 3 < len(words) else "")
                for i in range(0, len(words), 3)
            ]
            for index, piece in enumerate(pieces):
                last = index == len(pieces) - 1
                candidate: dict[str, Any] = {
                    "content": {"parts": [{"text": piece}], "role": "model"},
                    "index": 0,
                }
                if last:
                    candidate["finishReason"] = "STOP"
                chunk = {
                    "candidates": [candidate],
                    "usageMetadata": _usage(prompt, output)
                    if last
                    else {"promptTokenCount": prompt, "totalTokenCount": prompt},
                    "modelVersion": model,
                    "responseId": identity,
                }
                data = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def serve(port: int = 0) -> tuple[http.server.ThreadingHTTPServer, Gemini]:
    """Start the server on 127.0.0.1 in a daemon thread; return it (``server_address``) and its state."""
    state = Gemini()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler_for(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


if __name__ == "__main__":
    server, _ = serve(int(sys.argv[1]) if len(sys.argv) > 1 else 8766)
    print(f"local Gemini API on http://127.0.0.1:{server.server_address[1]}", flush=True)
    threading.Event().wait()
