"""Peers for the network seal's tests: this machine's own non-loopback address (remote to the seal without
leaving the machine), a keep-alive HTTP/1.1 server to pool connections to, and the one-tool run the tests
replay."""

from __future__ import annotations

import socket
import socketserver
from pathlib import Path
from typing import ClassVar

from stepfork.trace import record, trace_tool


@trace_tool
def lookup(city: str) -> str:
    """The recorded tool: the replay serves it while the test's code talks to the network."""
    return f"{city}: sunny"


def recorded_run(directory: Path) -> Path:
    """A bundle of one ``lookup("Paris")`` call under ``directory``."""
    path = directory / "run.sftrace"
    with record("net", output=path):
        lookup("Paris")
    return path


def host_address() -> str:
    """This machine's address on its default route (no datagram is sent by a UDP connect)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))
        address = str(probe.getsockname()[0])
    assert not address.startswith("127."), "the test needs a non-loopback interface"
    return address


class Hello(socketserver.StreamRequestHandler):
    """A keep-alive HTTP/1.1 server: answers every request on the connection with a small JSON body."""

    requests: ClassVar[int] = 0

    def handle(self) -> None:
        while self.rfile.readline() not in (b"", b"\r\n"):  # the request line
            while self.rfile.readline() not in (b"", b"\r\n"):  # its headers (no body: GET)
                pass
            Hello.requests += 1
            body = b'{"ok": true}'
            self.wfile.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            self.wfile.flush()
