"""The seal under asyncio (issue 11, "The network is sealed"): a connection opened *before* the sealed
session and written through asyncio's transports is refused with ``network_sealed`` raised from the
write itself, not swallowed by asyncio into "Fatal write error on socket transport" and a
ConnectionResetError later. Real asyncio servers on this machine's non-loopback address (remote to the
seal) and on 127.0.0.1; ``asyncio.run`` in each test (no plugin)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import socket
import socketserver
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import trustme
from seal_peers import Hello, host_address, lookup, recorded_run

from stepfork.replay import ReplayPolicyError, ReplaySession

T = TypeVar("T")


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return recorded_run(tmp_path)


@pytest.fixture
def asyncio_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="asyncio")
    return caplog


def fatal_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "asyncio" and "Fatal" in r.getMessage()]


class Echo:
    """An asyncio echo server (upper-cased replies) that keeps every byte it receives."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        while data := await reader.read(1024):
            self.received.append(data)
            writer.write(data.upper())
            await writer.drain()
        writer.close()


@contextlib.asynccontextmanager
async def serving(echo: Echo, host: str, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """Serve ``echo`` on ``host``; yield the port. Closed without waiting for its connections (3.12+'s
    ``async with server`` does): a failing test must fail, not hang on a connection it left open."""
    server = await asyncio.start_server(echo.handle, host, 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def run(main: Awaitable[T]) -> T:
    """``asyncio.run`` with a bound: a hung test fails after 20 s."""

    async def bounded() -> T:
        return await asyncio.wait_for(main, 20)

    return asyncio.run(bounded())


async def send(writer: asyncio.StreamWriter, *chunks: bytes) -> None:
    """What an agent does: ``write`` (``writelines`` for several chunks), then ``await drain()``."""
    if len(chunks) == 1:
        writer.write(chunks[0])
    else:
        writer.writelines(chunks)
    await writer.drain()


async def echo_roundtrip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> bytes:
    writer.write(data)
    await writer.drain()
    return await asyncio.wait_for(reader.readexactly(len(data)), 5)


def test_asyncio_streams_opened_before_the_session_are_refused_at_write(
    bundle: Path, asyncio_log: pytest.LogCaptureFixture
) -> None:
    echo = Echo()

    async def main() -> tuple[ReplaySession, list[ReplayPolicyError], bool]:
        async with serving(echo, "0.0.0.0") as port:
            reader, writer = await asyncio.open_connection(host_address(), port)
            assert await echo_roundtrip(reader, writer, b"before ") == b"BEFORE "
            refused = []
            with ReplaySession.from_trace(bundle) as session:
                with pytest.raises(ReplayPolicyError) as info:
                    await send(writer, b"during")
                refused.append(info.value)
                with pytest.raises(ReplayPolicyError) as info:  # 3.12+: sendmsg past write()
                    await send(writer, b"during", b"lines")
                refused.append(info.value)
            closing = writer.is_closing()
            # the connection is intact: after the session it is live again
            assert await echo_roundtrip(reader, writer, b"after") == b"AFTER"
            writer.close()
            await writer.wait_closed()
        return session, refused, closing

    session, refused, closing = run(main())
    assert [e.code for e in refused] == ["network_sealed", "network_sealed"]
    assert f"{host_address()}:" in str(refused[0])
    assert session.divergence is refused[0]
    assert not closing
    assert b"during" not in b"".join(echo.received)
    assert fatal_errors(asyncio_log) == []


@pytest.fixture
def tls() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) contexts with a certificate for this machine's address."""
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host_address()).configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    return server_context, client_context


def test_an_asyncio_tls_stream_opened_before_the_session_is_refused_before_encryption(
    bundle: Path, tls: tuple[ssl.SSLContext, ssl.SSLContext], asyncio_log: pytest.LogCaptureFixture
) -> None:
    echo = Echo()
    server_context, client_context = tls

    async def main() -> tuple[ReplaySession, ReplayPolicyError]:
        async with serving(echo, "0.0.0.0", server_context) as port:
            reader, writer = await asyncio.open_connection(host_address(), port, ssl=client_context)
            assert await echo_roundtrip(reader, writer, b"hello") == b"HELLO"
            with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayPolicyError) as info:
                await send(writer, b"secret prompt")
            assert await echo_roundtrip(reader, writer, b"bye") == b"BYE"
            writer.close()
            await writer.wait_closed()
        return session, info.value

    session, error = run(main())
    assert error.code == "network_sealed"
    assert session.divergence is error
    assert b"secret prompt" not in b"".join(echo.received)
    assert fatal_errors(asyncio_log) == []


def test_start_tls_on_a_connection_opened_before_the_session_is_refused_not_left_waiting(
    bundle: Path, tls: tuple[ssl.SSLContext, ssl.SSLContext], asyncio_log: pytest.LogCaptureFixture
) -> None:
    # start_tls's handshake writes its ClientHello from a loop callback: before, the refusal went to the
    # loop's exception handler and start_tls waited for the handshake timeout (60 s), then TimeoutError
    echo = Echo()
    server_context, client_context = tls

    async def main() -> tuple[ReplaySession, ReplayPolicyError]:
        async with serving(echo, "0.0.0.0", server_context) as port:
            host = host_address()  # its probe connects: not under the seal
            reader, writer = await asyncio.open_connection(host, port)  # TLS comes later
            with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayPolicyError) as info:
                await asyncio.wait_for(writer.start_tls(client_context, server_hostname=host), 5)
            await asyncio.wait_for(writer.start_tls(client_context, server_hostname=host), 5)
            assert await echo_roundtrip(reader, writer, b"after") == b"AFTER"  # the upgrade works after
            writer.close()
        return session, info.value

    session, error = run(main())
    assert error.code == "network_sealed"
    assert session.divergence is error
    assert [r.getMessage() for r in asyncio_log.records if "Exception in callback" in r.getMessage()] == []


@pytest.fixture
def http_server() -> Iterator[str]:
    Hello.requests = 0
    with socketserver.ThreadingTCPServer(("0.0.0.0", 0), Hello) as srv:
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
        yield f"http://{host_address()}:{srv.server_address[1]}/v1/models"
        srv.shutdown()


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_an_httpx_async_client_reusing_its_pooled_connection_is_sealed(
    library: str, bundle: Path, http_server: str, asyncio_log: pytest.LogCaptureFixture
) -> None:
    # As the sync client (test_network_seal_open_connections.py): the request raises ReplayPolicyError
    # itself, not httpx.ReadError / RemoteProtocolError (httpx2: the SDKs' fork of httpx, the same pool)
    httpx = importlib.import_module(library)

    async def main() -> tuple[ReplaySession, ReplayPolicyError]:
        async with httpx.AsyncClient(timeout=5) as client:
            assert (await client.get(http_server)).json() == {"ok": True}
            with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayPolicyError) as info:
                await client.get(http_server)
            assert (await client.get(http_server)).json() == {"ok": True}  # live again after it
        return session, info.value

    session, error = run(main())
    assert error.code == "network_sealed"
    assert session.divergence is error
    assert Hello.requests == 2  # before and after the session; none during it
    assert fatal_errors(asyncio_log) == []


def test_a_new_asyncio_connection_is_refused_at_connect(bundle: Path) -> None:
    echo = Echo()

    async def main() -> ReplaySession:
        async with serving(echo, "0.0.0.0") as port:
            with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayPolicyError):
                await asyncio.open_connection(host_address(), port)
        return session

    session = run(main())
    assert session.divergence is not None
    assert session.divergence.code == "network_sealed"
    assert echo.connections == 0


def test_allowed_loopback_asyncio_connections_work_inside_the_session(
    bundle: Path, asyncio_log: pytest.LogCaptureFixture
) -> None:
    echo = Echo()

    async def main() -> ReplaySession:
        async with serving(echo, "127.0.0.1") as port:
            pooled = await asyncio.open_connection("127.0.0.1", port)  # opened before the session
            # the name allows the addresses it stands for (127.0.0.1 and ::1), on that port
            with ReplaySession.from_trace(bundle, allow_hosts=[f"localhost:{port}"]) as session:
                assert await echo_roundtrip(*pooled, b"db") == b"DB"
                await send(pooled[1], b"a", b"b")
                assert await asyncio.wait_for(pooled[0].readexactly(2), 5) == b"AB"
                fresh = await asyncio.open_connection("localhost", port)
                assert await echo_roundtrip(*fresh, b"query") == b"QUERY"
                assert lookup("Paris") == "Paris: sunny"  # the replay itself goes on
            for _, writer in (pooled, fresh):
                writer.close()
                await writer.wait_closed()
        return session

    session = run(main())
    assert session.divergence is None
    assert fatal_errors(asyncio_log) == []


def test_an_asyncio_datagram_endpoint_opened_before_the_session_is_refused_at_sendto(
    bundle: Path, asyncio_log: pytest.LogCaptureFixture
) -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("0.0.0.0", 0))
    receiver.settimeout(5)
    target = (host_address(), receiver.getsockname()[1])

    async def main() -> list[ReplayPolicyError]:
        loop = asyncio.get_running_loop()
        connected, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=target)
        unconnected, _ = await loop.create_datagram_endpoint(
            asyncio.DatagramProtocol, local_addr=("0.0.0.0", 0)
        )
        refused = []
        with ReplaySession.from_trace(bundle):
            for send in (lambda: connected.sendto(b"metric:1|c"), lambda: unconnected.sendto(b"x", target)):
                with pytest.raises(ReplayPolicyError) as info:
                    send()
                refused.append(info.value)
        connected.sendto(b"after")
        closing = connected.is_closing() or unconnected.is_closing()
        connected.close()
        unconnected.close()
        assert not closing
        return refused

    with receiver:
        refused = run(main())
        assert receiver.recv(64) == b"after"  # the first datagram to arrive: none was sent under the seal
    assert [e.code for e in refused] == ["network_sealed", "network_sealed"]
    assert fatal_errors(asyncio_log) == []


def test_the_loops_socket_methods_on_a_connection_opened_before_the_session_are_refused(
    bundle: Path, tmp_path: Path
) -> None:
    # loop.sock_sendfile / loop.sendfile send with os.sendfile on the descriptor, past socket.send;
    # loop.sock_sendall calls socket.send outside any try of asyncio's
    echo = Echo()
    secret = tmp_path / "payload.txt"
    secret.write_bytes(b"SECRET-VIA-SENDFILE")

    async def main() -> list[ReplayPolicyError]:
        loop = asyncio.get_running_loop()
        async with serving(echo, "0.0.0.0") as port:
            sock = socket.create_connection((host_address(), port), timeout=5)
            sock.setblocking(False)
            reader, writer = await asyncio.open_connection(host_address(), port)
            refused = []
            with sock, secret.open("rb") as f, ReplaySession.from_trace(bundle):
                with pytest.raises(ReplayPolicyError) as info:
                    await loop.sock_sendall(sock, b"SECRET-VIA-SOCK-SENDALL")
                refused.append(info.value)
                with pytest.raises(ReplayPolicyError) as info:
                    await loop.sock_sendfile(sock, f)
                refused.append(info.value)
                with pytest.raises(ReplayPolicyError) as info:
                    await loop.sendfile(writer.transport, f)
                refused.append(info.value)
            assert await echo_roundtrip(reader, writer, b"after") == b"AFTER"
            writer.close()
        return refused

    refused = run(main())
    assert [e.code for e in refused] == ["network_sealed"] * 3
    assert b"SECRET" not in b"".join(echo.received)


def test_the_asyncio_hooks_are_skipped_where_asyncio_lacks_a_transport_class(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # asyncio's transports are private names: where one is missing (a later Python) the seal still installs
    # the others, the socket hooks still refuse, and every class is as it was after the session (3.11's
    # inherited writelines is not copied onto the class)
    import asyncio.proactor_events  # the Windows transports: hooked too when their module is loaded
    import asyncio.selector_events
    import asyncio.sslproto

    classes = [
        asyncio.selector_events._SelectorSocketTransport,
        asyncio.sslproto._SSLProtocolTransport,
        asyncio.proactor_events._ProactorBaseWritePipeTransport,
        asyncio.proactor_events._ProactorDatagramTransport,
        asyncio.BaseEventLoop,
    ]
    before = [dict(vars(cls)) for cls in classes]
    monkeypatch.delattr(asyncio.selector_events, "_SelectorDatagramTransport")
    with ReplaySession.from_trace(bundle) as session:
        during = [dict(vars(cls)) for cls in classes]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe, pytest.raises(ReplayPolicyError):
            probe.sendto(b"x", ("192.0.2.10", 9))
    assert [dict(vars(cls)) for cls in classes] == before
    changed = [
        {name for name in was if now[name] is not was[name]} | set(now) - set(was)
        for was, now in zip(before, during, strict=True)
    ]
    assert changed[:3] == [
        {"write"} | ({"writelines"} if "writelines" in before[0] else set()),
        {"write", "writelines"},
        {"write"},
    ]
    assert changed[3:] == [{"sendto"}, {"sock_sendfile", "sendfile", "start_tls"}]
    assert session.divergence is not None
