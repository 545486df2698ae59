"""Unix sockets under the network seal (NEWCOMER2 finding 3): a Unix socket server in another process (a
local database's socket, ``/var/run/docker.sock``) is a dependency like a TCP peer on 127.0.0.1, refused
in frozen replay before anything is sent, unless ``allow_hosts`` names its path; what the process needs to
talk to itself stays open: a listener it bound, ``socket.socketpair`` and asyncio's self-pipe,
``multiprocessing``'s manager. The server is a real process that counts the connections it accepts."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stepfork.replay import ReplayPolicyError, ReplaySession

from .seal_peers import lookup, recorded_run

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets")

SERVER = textwrap.dedent(
    """
    import socket, sys
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sys.argv[1])
    listener.listen(8)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        print("connection", flush=True)
        with connection:
            data = connection.recv(1024)
            if data:
                print("request", flush=True)
                connection.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\n\\r\\nok")
    """
)


class UnixServer:
    """A Unix socket server in another process; :meth:`seen` stops it and returns the lines it printed
    (``connection`` per connection accepted, ``request`` per request read) that :meth:`next_line` did not
    read."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, self.path], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def next_line(self) -> str:
        """The next line the server prints (waits for it)."""
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def seen(self) -> list[str]:
        self.process.terminate()
        out, _ = self.process.communicate(timeout=30)
        return out.split()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[[str], UnixServer]]:
    """``start_server(NAME)``: a :class:`UnixServer` on ``tmp_path / NAME``, stopped at teardown."""
    started: list[UnixServer] = []

    def start(name: str) -> UnixServer:
        started.append(UnixServer(tmp_path / name))
        return started[-1]

    yield start
    for srv in started:
        if srv.process.poll() is None:
            srv.seen()


@pytest.fixture
def server(start_server: Callable[[str], UnixServer]) -> UnixServer:
    return start_server("db.sock")


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return recorded_run(tmp_path)


def ask(path: str) -> bytes:
    """The agent's own call to a local service over its Unix socket (not instrumented)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(path)
        client.sendall(b"GET /containers/json HTTP/1.1\r\nHost: docker\r\n\r\n")
        return client.recv(1024)


def test_a_unix_socket_server_in_another_process_is_refused_and_is_the_divergence(
    bundle: Path, server: UnixServer
) -> None:
    assert ask(server.path).endswith(b"ok")  # reachable outside a replay
    with ReplaySession.from_trace(bundle) as session:
        lookup("Paris")
        with contextlib.suppress(Exception):  # the agent swallows it, as agents do
            ask(server.path)
    assert session.divergence is not None
    assert session.divergence.code == "network_sealed"
    assert f"the connection to the Unix socket {server.path} was refused" in str(session.divergence)
    assert f"--allow-host {server.path}" in str(session.divergence)
    assert server.seen() == ["connection", "request"]  # the first ask only: the replay connected to nothing


def test_allow_hosts_names_the_path_of_a_unix_socket_it_lets_through(
    bundle: Path, start_server: Callable[[str], UnixServer]
) -> None:
    """A path is kept as given (a file name is case-sensitive, a host name is not), and only the path
    named is let through."""
    allowed, other = start_server("Docker.sock"), start_server("docker.sock")
    with ReplaySession.from_trace(bundle, allow_hosts=[allowed.path]) as session:
        lookup("Paris")
        assert ask(allowed.path).endswith(b"ok")
        with pytest.raises(ReplayPolicyError):
            ask(other.path)
    assert session.allow_hosts == (allowed.path,)
    assert session.divergence is not None
    assert other.path in str(session.divergence)
    assert allowed.seen() == ["connection", "request"]
    assert other.seen() == []


def test_a_connection_opened_before_the_session_is_refused_at_its_first_send(
    bundle: Path, server: UnixServer
) -> None:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(server.path)  # a client's pooled connection, opened by a live run before the replay
    assert server.next_line() == "connection"
    with client, ReplaySession.from_trace(bundle) as session:
        lookup("Paris")
        with pytest.raises(ReplayPolicyError, match="the Unix socket"):
            client.sendall(b"GET / HTTP/1.1\r\n\r\n")
    assert session.divergence is not None
    assert server.seen() == []  # connected before, never sent to


def test_a_sealed_python_child_refuses_the_unix_socket_too(bundle: Path, server: UnixServer) -> None:
    code = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({server.path!r}); s.sendall(b'x')"
    with ReplaySession.from_trace(bundle) as session:
        lookup("Paris")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    assert "PermissionError" in done.stderr
    assert session.divergence is not None
    assert "a child process started during the replay" in str(session.divergence)
    assert server.seen() == []


def _manager_roundtrip() -> int:
    with multiprocessing.get_context("fork").Manager() as manager:
        shared = manager.list([1, 2])
        shared.append(3)
        return sum(shared)


def test_what_the_process_needs_to_talk_to_itself_stays_open(bundle: Path, tmp_path: Path) -> None:
    """A listener this process bound (reached from this process and from a sealed Python child),
    socketpair and asyncio's self-pipe, a multiprocessing manager (its own process, listening in a
    ``pymp-*`` folder)."""
    own = str(tmp_path / "own.sock")

    async def over_unix() -> bytes:
        _, writer = await asyncio.open_unix_connection(own)
        writer.write(b"ping")
        await writer.drain()
        writer.close()
        return b"sent"

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(own)
        listener.listen(2)
        with ReplaySession.from_trace(bundle) as session:
            lookup("Paris")
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(own)
                client.sendall(b"hello")
                accepted, _ = listener.accept()
                with accepted:
                    assert accepted.recv(5) == b"hello"
                    accepted.sendall(b"reply")  # a server of this process answering
                assert client.recv(5) == b"reply"
            assert asyncio.run(over_unix()) == b"sent"
            back = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({own!r}); s.sendall(b'tool')"
            done = subprocess.run([sys.executable, "-c", back], capture_output=True, text=True, check=False)
            assert done.returncode == 0, done.stderr  # a sealed child's tool talking back to the replay
            left, right = socket.socketpair()
            with left, right:
                left.sendall(b"x")
                assert right.recv(1) == b"x"
            if sys.platform.startswith("linux"):
                assert _manager_roundtrip() == 6
    assert session.divergence is None, session.divergence
