"""The seal also holds for connections opened *before* the sealed session (issue 11, "The network is
sealed"): an HTTP client's keep-alive pool, or a socket an earlier live run left connected, sends without
a new connect, so the first send on each socket checks its peer. Real sockets and a real TLS server on this
machine's own non-loopback address (so the peer is "remote" to the seal without leaving the machine)."""

from __future__ import annotations

import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import trustme
from seal_peers import Hello, host_address, lookup, recorded_run

from stepfork.replay import ReplayPolicyError, ReplaySession


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return recorded_run(tmp_path)


class Recorder(socketserver.BaseRequestHandler):
    """Keeps every byte it receives; echoes upper-cased."""

    received: ClassVar[list[bytes]] = []

    def handle(self) -> None:
        while data := self.request.recv(1024):
            Recorder.received.append(data)
            self.request.sendall(data.upper())


@pytest.fixture
def tcp_server() -> Iterator[int]:
    Recorder.received = []
    with socketserver.ThreadingTCPServer(("0.0.0.0", 0), Recorder) as srv:
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
        yield srv.server_address[1]
        srv.shutdown()


def test_a_keep_alive_connection_opened_before_the_session_cannot_send_to_a_remote_host(
    bundle: Path, tcp_server: int
) -> None:
    remote = socket.create_connection((host_address(), tcp_server), timeout=5)
    local = socket.create_connection(("127.0.0.1", tcp_server), timeout=5)
    with remote, local:
        remote.sendall(b"before ")  # the live run's request on the pooled connection
        assert remote.recv(16) == b"BEFORE "
        with ReplaySession.from_trace(bundle, allow_hosts=[f"127.0.0.1:{tcp_server}"]) as session:
            with pytest.raises(ReplayPolicyError) as info:
                remote.sendall(b"during")
            with pytest.raises(ReplayPolicyError):
                remote.send(b"during")
            local.sendall(b"db")  # the agent's own local connection, allowed, keeps working
            assert local.recv(16) == b"DB"
        assert lookup("Paris") == "Paris: sunny"  # after the session: live again
        remote.sendall(b"after")
        assert remote.recv(16) == b"AFTER"
    assert info.value.code == "network_sealed"
    assert f"{host_address()}:{tcp_server}" in str(info.value)
    assert session.divergence is info.value
    assert b"during" not in b"".join(Recorder.received)


def test_allow_hosts_lets_a_connection_opened_before_the_session_send(bundle: Path, tcp_server: int) -> None:
    address = host_address()
    with socket.create_connection((address, tcp_server), timeout=5) as remote:
        with ReplaySession.from_trace(bundle, allow_hosts=[address]) as session:
            remote.sendall(b"allowed")
            assert remote.recv(16) == b"ALLOWED"
        assert session.divergence is None


def test_a_connected_datagram_socket_cannot_send_to_a_remote_host(bundle: Path) -> None:
    # UDP connect sends nothing: a socket connected before the session then sends with send()/sendmsg()
    remote = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with remote:
        remote.connect(("192.0.2.10", 8125))  # a metrics client's socket (TEST-NET-1)
        with ReplaySession.from_trace(bundle):
            with pytest.raises(ReplayPolicyError):
                remote.send(b"metric:1|c")
            with pytest.raises(ReplayPolicyError):
                remote.sendmsg([b"metric:1|c"])


@pytest.fixture
def tls_server() -> Iterator[tuple[int, ssl.SSLContext]]:
    """A TLS echo server on all interfaces with a certificate for this machine's address."""
    ca = trustme.CA()
    address = host_address()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(address).configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    Recorder.received = []

    class TlsServer(socketserver.ThreadingTCPServer):
        daemon_threads = True

        def get_request(self) -> tuple[socket.socket, object]:
            conn, peer = super().get_request()
            return server_context.wrap_socket(conn, server_side=True), peer

    with TlsServer(("0.0.0.0", 0), Recorder) as srv:
        threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
        yield srv.server_address[1], client_context
        srv.shutdown()


def test_a_tls_connection_opened_before_the_session_is_refused_before_encryption(
    bundle: Path, tls_server: tuple[int, ssl.SSLContext]
) -> None:
    port, context = tls_server
    address = host_address()
    raw = socket.create_connection((address, port), timeout=5)
    with context.wrap_socket(raw, server_hostname=address) as tls:
        tls.sendall(b"hello")
        assert tls.recv(16) == b"HELLO"
        with ReplaySession.from_trace(bundle):
            for send in (tls.sendall, tls.send, tls.write):
                with pytest.raises(ReplayPolicyError):
                    send(b"secret prompt")
        tls.sendall(b"bye")
        assert tls.recv(16) == b"BYE"
    assert b"secret prompt" not in b"".join(Recorder.received)


def test_an_httpx_client_reusing_its_pooled_connection_is_sealed(bundle: Path) -> None:
    # The everyday case: the client made a live request before the replay, and its pool keeps the
    # connection; under the seal the next request goes out on it without a connect.
    import httpx

    Hello.requests = 0
    with socketserver.ThreadingTCPServer(("0.0.0.0", 0), Hello) as srv:
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
        url = f"http://{host_address()}:{srv.server_address[1]}/v1/models"
        with httpx.Client(timeout=5) as client:
            assert client.get(url).json() == {"ok": True}
            with ReplaySession.from_trace(bundle) as session, pytest.raises(ReplayPolicyError):
                client.get(url)
        srv.shutdown()
    assert Hello.requests == 1
    assert session.divergence is not None
    assert session.divergence.code == "network_sealed"


class HeldReply(socketserver.BaseRequestHandler):
    """Answers each request only once the test says so (``go``): the reply is sent while the replay runs."""

    go = threading.Event()
    sent: ClassVar[list[bool]] = []

    def handle(self) -> None:
        data = self.request.recv(1024)
        HeldReply.go.wait(10)
        self.request.sendall(data.upper())
        HeldReply.sent.append(True)


def test_a_server_in_the_process_still_answers_remote_clients_during_a_sealed_replay(bundle: Path) -> None:
    # A reply on an accepted connection is not a connection leaving the process (a health or metrics
    # endpoint answering a remote scraper while a replay runs): the seal leaves it alone.
    HeldReply.go.clear()
    HeldReply.sent = []
    with socketserver.ThreadingTCPServer(("0.0.0.0", 0), HeldReply) as srv:
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
        with socket.create_connection((host_address(), srv.server_address[1]), timeout=5) as scraper:
            scraper.sendall(b"metrics?")  # the remote client's request, before the replay
            with ReplaySession.from_trace(bundle) as session:
                HeldReply.go.set()  # the server thread replies now, under the seal
                assert scraper.recv(16) == b"METRICS?"
        srv.shutdown()
    assert HeldReply.sent == [True]
    assert session.divergence is None


def test_allow_hosts_by_name_covers_a_connection_opened_before_the_session(
    bundle: Path, tcp_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # db.internal is this machine's address (an /etc/hosts entry, stood in for by the resolver below); the
    # pooled connection was resolved before the session, so the seal must resolve the allowed name itself.
    address, real = host_address(), socket.getaddrinfo

    def resolve(host: object, port: object, *args: object, **kwargs: object) -> object:
        return real(address if host == "db.internal" else host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    pooled = socket.create_connection(("db.internal", tcp_server), timeout=5)
    with pooled, ReplaySession.from_trace(bundle, allow_hosts=["db.internal"]) as session:
        pooled.sendall(b"query")
        assert pooled.recv(16) == b"QUERY"
    assert session.divergence is None


def test_sendfile_on_a_connection_opened_before_the_session_is_refused(
    bundle: Path, tcp_server: int, tmp_path: Path
) -> None:
    secret = tmp_path / "payload.txt"
    secret.write_bytes(b"SECRET-VIA-SENDFILE")
    remote = socket.create_connection((host_address(), tcp_server), timeout=5)
    with remote, secret.open("rb") as f, ReplaySession.from_trace(bundle), pytest.raises(ReplayPolicyError):
        remote.sendfile(f)
    assert b"SECRET" not in b"".join(Recorder.received)


def test_a_thread_inside_a_send_hook_when_the_last_session_ends_still_sends(bundle: Path) -> None:
    # unseal() used to pop the originals while another thread was between the check and the call: that
    # thread's sendall raised KeyError, on purely local traffic. The hook a thread holds keeps working.
    from stepfork.replay import network

    a, b = socket.socketpair()
    with a, b:
        with ReplaySession.from_trace(bundle):
            hook = socket.socket.sendall
        assert hook is network._sendall  # what a thread that looked it up under the seal still calls
        hook(a, b"after")
        assert b.recv(16) == b"after"
