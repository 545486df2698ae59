"""A local Amazon Bedrock runtime API (``bedrock-runtime.<region>.amazonaws.com``'s shapes) on 127.0.0.1.

What ``bedrock_agent.py`` calls through boto3, answered as Bedrock answers:

- ``POST /model/{modelId}/converse``: the Converse API's JSON. When the request has a ``toolConfig`` and
  its messages hold no ``toolResult`` yet, the model asks for the first tool with ``{"city": <the last word
  of the prompt>}`` (a ``toolUse`` block with a fresh ``tooluse_...`` id, ``stopReason: tool_use``); else
  it answers in text, from the tool's result when there is one.
- ``POST /model/{modelId}/converse-stream``: the same answer as an AWS event stream
  (``application/vnd.amazon.eventstream``, chunked): ``messageStart``, ``contentBlockDelta``...,
  ``contentBlockStop``, ``messageStop``, ``metadata`` (usage and latency), each event padded with a
  random ``p`` field as Bedrock pads them.

Every response carries a fresh ``x-amzn-RequestId``, ``Date``, ``usage`` counts and ``metrics.latencyMs``.
Every request is counted (``requests``) and its SigV4 ``Authorization`` kept (``authorizations``), so a test
proves a replay sent nothing. ``python bedrock_server.py [PORT]`` runs it in the foreground; tests use
:func:`serve`. The event-stream encoder here is written from the format's description, apart from
Stepfork's, so the example checks one against the other.
"""

from __future__ import annotations

import http.server
import json
import os
import random
import string
import struct
import sys
import threading
import uuid
import zlib
from typing import Any
from urllib.parse import unquote


def event_message(event_type: str, payload: dict[str, Any]) -> bytes:
    """One AWS event-stream message: prelude (lengths, their CRC32), string headers, JSON payload, CRC32."""
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        raw = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    body = json.dumps(payload, separators=(",", ":")).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def _padding() -> str:
    return "".join(random.choices(string.ascii_letters + string.digits, k=random.randint(4, 30)))


class Bedrock:
    """What the server received: ``requests`` holds ``(method, path, body)`` in order."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.authorizations: list[str] = []
        self.lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str, int]:
        """The content blocks the model answers ``body`` with, its stop reason and the prompt's tokens."""
        messages = body.get("messages") or []
        blocks = [b for m in messages for b in m.get("content") or []]
        words = sum(len(str(b.get("text", "")).split()) for b in blocks)
        results = [b["toolResult"] for b in blocks if "toolResult" in b]
        tools = [t["toolSpec"] for t in (body.get("toolConfig") or {}).get("tools") or [] if "toolSpec" in t]
        prompt = next((b["text"] for b in blocks if b.get("text")), "")
        city = str(prompt).rstrip("?.!").split()[-1] if prompt else "nowhere"
        if tools and not results:
            use = {
                "toolUseId": f"tooluse_{uuid.uuid4().hex[:22]}",
                "name": tools[0]["name"],
                "input": {"city": city},
            }
            return [{"text": "Let me check the weather."}, {"toolUse": use}], "tool_use", words + 300
        if results:
            weather = next((c["json"] for c in results[-1].get("content") or [] if "json" in c), {})
            degrees, sky = weather.get("temperature_c", "?"), weather.get("conditions", "?")
            text = f"It is {degrees} degrees and {sky} in {city}."
            return [{"text": text}], "end_turn", words + 350
        return [{"text": f"Tomorrow in {city}: mild, light wind, no rain expected."}], "end_turn", words + 12


def handler_for(state: Bedrock) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _head(self, content_type: str, extra: dict[str, str]) -> None:
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
            with state.lock:
                state.requests.append(("POST", self.path, body))
                state.authorizations.append(self.headers.get("authorization", ""))
            model, _, operation = unquote(self.path.split("?", 1)[0]).removeprefix("/model/").rpartition("/")
            blocks, stop, prompt = state.answer(body)
            output = sum(len(str(b.get("text", "")).split()) for b in blocks) + 20 * sum(
                "toolUse" in b for b in blocks
            )
            usage = {"inputTokens": prompt, "outputTokens": output, "totalTokens": prompt + output}
            latency = 300 + int.from_bytes(os.urandom(1), "big")
            if operation == "converse":
                payload = {
                    "output": {"message": {"role": "assistant", "content": blocks}},
                    "stopReason": stop,
                    "usage": usage,
                    "metrics": {"latencyMs": latency},
                }
                data = json.dumps(payload).encode()
                self._head("application/json", {"content-length": str(len(data))})
                self.wfile.write(data)
                return
            self._head("application/vnd.amazon.eventstream", {"transfer-encoding": "chunked"})
            text = " ".join(str(b.get("text", "")) for b in blocks if "text" in b)
            words = text.split(" ")
            events = [("messageStart", {"role": "assistant"})]
            events += [
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": w if i == 0 else f" {w}"}})
                for i, w in enumerate(words)
            ]
            events += [
                ("contentBlockStop", {"contentBlockIndex": 0}),
                ("messageStop", {"stopReason": stop}),
                ("metadata", {"usage": usage, "metrics": {"latencyMs": latency}}),
            ]
            for event_type, payload in events:
                data = event_message(event_type, {**payload, "p": _padding()})
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            del model

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def serve(port: int = 0) -> tuple[http.server.ThreadingHTTPServer, Bedrock]:
    """Start the server on 127.0.0.1 in a daemon thread; return it (``server_address``) and its state."""
    state = Bedrock()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler_for(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


if __name__ == "__main__":
    server, _ = serve(int(sys.argv[1]) if len(sys.argv) > 1 else 8767)
    print(f"local Bedrock runtime API on http://127.0.0.1:{server.server_address[1]}", flush=True)
    threading.Event().wait()
