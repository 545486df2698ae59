"""The network is sealed during frozen/forbidden/manual replay (issues 11 and 29): a connection to any
address, a real TCP server on 127.0.0.1 included, is refused before any I/O, as the divergence;
``allow_hosts`` opens exactly the host (or host and port) it names."""

from __future__ import annotations

import asyncio
import os
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepfork.replay import ReplayPolicyError, ReplaySession
from stepfork.replay.network import is_sealed
from stepfork.trace import record, trace_tool

# TEST-NET-1 (RFC 5737): never routed; a connect that got through would hang or fail, not be refused by us.
REMOTE = "192.0.2.10"


class Echo(socketserver.BaseRequestHandler):
    connections = 0  # how many connections reached the server

    def handle(self) -> None:
        Echo.connections += 1
        self.request.sendall(self.request.recv(1024).upper())


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo) as srv:
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        yield srv.server_address[:2]
        srv.shutdown()


def ask_db(address: tuple[str, int]) -> bytes:
    """The agent's own localhost database (not instrumented)."""
    with socket.create_connection(address, timeout=5) as conn:
        conn.sendall(b"select 1")
        return conn.recv(1024)


@trace_tool
def lookup(city: str) -> str:
    return f"{city}: sunny"


def agent(address: tuple[str, int], remote: tuple[str, int] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"tool": lookup("Paris"), "db": ask_db(address)}
    if remote is not None:
        with socket.create_connection(remote, timeout=5):  # an uninstrumented call to a provider
            pass
    return out


@pytest.fixture
def bundle(tmp_path: Path, server: tuple[str, int]) -> Path:
    path = tmp_path / "run.sftrace"
    with record("net", output=path):
        agent(server, None)
    return path


class CountingSocket(socket.socket):
    """Counts the bytes sent, to show nothing was."""

    sent = 0

    def send(self, data: Any, *args: Any) -> int:
        CountingSocket.sent += len(data)
        return super().send(data, *args)


def test_loopback_is_sealed_like_any_address_and_refused_as_the_divergence(
    bundle: Path, server: tuple[str, int]
) -> None:
    before = Echo.connections
    with ReplaySession.from_trace(bundle) as session:
        assert is_sealed()
        with pytest.raises(ReplayPolicyError) as local:
            ask_db(server)
        with pytest.raises(ReplayPolicyError) as info:
            agent(server, (REMOTE, 443))
    assert not is_sealed()
    assert Echo.connections == before  # nothing reached the local server
    assert local.value.code == info.value.code == "network_sealed"
    assert f"127.0.0.1:{server[1]}" in str(local.value)
    assert f"--allow-host 127.0.0.1:{server[1]}" in str(local.value)
    assert "instrument_httpx" in str(local.value)
    assert session.divergence is local.value
    assert session.divergence_count == 2


def test_allow_host_opens_exactly_the_host_and_port_it_names(bundle: Path, server: tuple[str, int]) -> None:
    host, port = server
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo) as other:
        threading.Thread(target=other.serve_forever, daemon=True).start()
        with ReplaySession.from_trace(bundle, allow_hosts=[f"{host}:{port}"]) as session:
            assert session.allow_hosts == (f"127.0.0.1:{port}",)
            assert ask_db(server) == b"SELECT 1"
            with pytest.raises(ReplayPolicyError):  # the same host on another port stays sealed
                ask_db(other.server_address[:2])
        other.shutdown()
    assert session.divergence is not None
    with ReplaySession.from_trace(bundle, allow_hosts=["LOCALHOST."]) as session:  # a name: every port
        assert ask_db(("localhost", port)) == b"SELECT 1"
        assert ask_db(("127.0.0.1", port)) == b"SELECT 1"  # the address the allowed name stands for
    assert session.divergence is None


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("127.0.0.1:8000", ("127.0.0.1", 8000)),
        ("DB.Internal.", ("db.internal", None)),
        ("[::1]:8000", ("::1", 8000)),
        ("[0:0::1]", ("::1", None)),
        ("::1", ("::1", None)),
        ("::ffff:127.0.0.1", ("127.0.0.1", None)),
    ],
)
def test_allowed_host_forms(given: str, normal: tuple[str, int | None]) -> None:
    from stepfork.replay.network import parse_allowed_host

    assert parse_allowed_host(given) == normal


@pytest.mark.parametrize("given", ["", "host:0", "host:70000", "host:http", "[127.0.0.1]:80", "[::1"])
def test_a_malformed_allowed_host_is_a_value_error_naming_it(bundle: Path, given: str) -> None:
    with pytest.raises(ValueError, match="allowed host"):
        ReplaySession.from_trace(bundle, allow_hosts=[given or ":"])


def test_nothing_is_sent_and_the_socket_never_connects(bundle: Path) -> None:
    sock = CountingSocket(socket.AF_INET, socket.SOCK_STREAM)
    with ReplaySession.from_trace(bundle), sock, pytest.raises(ReplayPolicyError):
        sock.connect((REMOTE, 80))
    assert CountingSocket.sent == 0
    with pytest.raises(OSError, match=r"(not connected|Bad file descriptor)"):
        sock.getpeername()


def test_a_name_is_refused_before_it_is_resolved(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle), pytest.raises(ReplayPolicyError) as info:
        socket.getaddrinfo("api.openai.com", 443)
    assert "api.openai.com:443" in str(info.value)


def test_an_asyncio_connection_is_refused_and_an_allowed_one_works(
    bundle: Path, server: tuple[str, int]
) -> None:
    async def main() -> bytes:
        with pytest.raises(ReplayPolicyError):
            await asyncio.open_connection(REMOTE, 443)
        reader, writer = await asyncio.open_connection(*server)
        writer.write(b"ping")
        await writer.drain()
        data = await reader.read(1024)
        writer.close()
        return data

    with ReplaySession.from_trace(bundle, allow_hosts=[f"127.0.0.1:{server[1]}"]):
        assert asyncio.run(main()) == b"PING"


def test_allow_hosts_and_network_open_let_connections_through(bundle: Path) -> None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.setblocking(False)
    with ReplaySession.from_trace(bundle, allow_hosts=[REMOTE]) as session:
        # not refused by the seal: the OS starts the non-blocking attempt (EINPROGRESS) or reports its errno
        assert isinstance(probe.connect_ex((REMOTE, 9)), int)
    probe.close()
    assert session.divergence is None
    with ReplaySession.from_trace(bundle, network="open") as session:
        assert not is_sealed()
    assert session.network == "open"


def test_live_and_hybrid_leave_the_network_open_by_default(bundle: Path) -> None:
    assert ReplaySession.from_trace(bundle, "live").network == "open"
    assert ReplaySession.from_trace(bundle).network == "sealed"
    with pytest.raises(ValueError, match="network must be"):
        ReplaySession.from_trace(bundle, network="closed")


def test_a_unix_socket_stays_open(bundle: Path, tmp_path: Path) -> None:
    path = str(tmp_path / "db.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(1)
        with ReplaySession.from_trace(bundle), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)


def test_an_uninstrumented_sdk_client_fails_with_network_sealed_and_the_allowed_local_db_works(
    tmp_path: Path, server: tuple[str, int]
) -> None:
    openai = pytest.importorskip("openai")
    path = tmp_path / "sdk.sftrace"

    def sdk_agent() -> bytes:
        db = ask_db(server)
        client = openai.OpenAI(api_key="sk-test", max_retries=0)  # forgot instrument_openai(client)
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        return db

    with record("sdk", output=path):
        ask_db(server)
    allowed = [f"127.0.0.1:{server[1]}"]
    with ReplaySession.from_trace(path, allow_hosts=allowed) as session, pytest.raises(Exception) as info:
        sdk_agent()
    assert session.divergence is not None
    assert session.divergence.code == "network_sealed"
    assert "api.openai.com:443" in str(session.divergence)
    chain = [info.value, info.value.__cause__, info.value.__context__]
    assert any(isinstance(e, ReplayPolicyError) for e in chain)


AGENT = """
import socket


def run_agent():
    with socket.create_connection(("{remote}", 443), timeout=0.5):
        pass
    return "sent"
"""


def test_the_cli_reports_network_sealed_and_allow_host_lets_it_through(bundle: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    stepfork = Path(sys.executable).parent / "stepfork"
    (tmp_path / "net_agent.py").write_text(AGENT.format(remote=REMOTE))
    args = [str(stepfork), "replay", str(bundle), "--entrypoint", "net_agent:run_agent"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "network_sealed" in done.stdout or "network sealed" in done.stdout
    assert f"{REMOTE}:443" in done.stdout
    # allowed: the seal lets it through, so whatever the OS says (unreachable, timeout) is the agent's
    allowed = subprocess.run(
        [*args, "--allow-host", REMOTE],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "network sealed" not in allowed.stdout


def test_an_exported_test_holds_the_network_options_as_literals(bundle: Path, tmp_path: Path) -> None:
    from stepfork.analysis.export import generate_pytest_source, read_exported_constants

    source = generate_pytest_source(
        trace_path=bundle,
        output_path=tmp_path / "test_x.py",
        entrypoint="net_agent:run_agent",
        network="open",
        allow_hosts=["db.internal", "10.0.0.5"],
    )
    constants = read_exported_constants(source)
    assert (constants["NETWORK"], constants["ALLOW_HOSTS"]) == ("open", ["10.0.0.5", "db.internal"])
    assert "network=NETWORK" in source
    assert "allow_hosts=ALLOW_HOSTS" in source


def test_run_regression_case_is_sealed_and_can_allow_a_host(bundle: Path, server: tuple[str, int]) -> None:
    from stepfork.replay.regression import run_regression_case

    def run_agent() -> str:
        lookup("Paris")
        ask_db(server)
        with socket.create_connection((REMOTE, 443), timeout=0.2):
            pass
        return "sent"

    with pytest.raises(AssertionError, match=r"network_sealed|network sealed"):
        run_regression_case(run_agent, bundle, has_expectation=False)
    # allowed: the seal lets the connection through, so what fails now is the OS's answer, not the seal
    allowed = [REMOTE, f"127.0.0.1:{server[1]}"]
    with pytest.raises(AssertionError) as info:
        run_regression_case(run_agent, bundle, has_expectation=False, allow_hosts=allowed)
    assert "network sealed" not in str(info.value)


MARKED = """
import socket

import pytest

from stepfork.trace import trace_tool


@trace_tool
def lookup(city: str) -> str:
    return city


@pytest.mark.stepfork({bundle!r}, allow_hosts=["{remote}"])
def test_allowed():
    assert lookup("Paris") == "Paris: sunny"
    with pytest.raises(OSError):
        socket.create_connection(("{remote}", 443), timeout=0.2)


@pytest.mark.stepfork({bundle!r})
def test_sealed():
    from stepfork.replay import ReplayPolicyError

    lookup("Paris")
    with pytest.raises(ReplayPolicyError):
        socket.create_connection(("{remote}", 443), timeout=0.2)
"""


def test_the_pytest_marker_takes_the_network_options(bundle: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "test_marked.py").write_text(MARKED.format(bundle=str(bundle), remote=REMOTE))
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*args, "-p", "no:xdist", "--rootdir", str(folder), str(folder)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    # test_sealed catches the error, but the refused connection is the replay's divergence: it fails
    assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert "FAILED test_marked.py::test_sealed" in done.stdout
    assert "network" in done.stdout.split("test_sealed", 1)[1]


def test_fork_goes_live_from_the_fork_point_with_the_network_open(tmp_path: Path) -> None:
    from stepfork.analysis import fork

    def run_agent() -> int:
        lookup("Paris")
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.setblocking(False)
        try:  # the live part may reach the network: the seal must not refuse it
            return probe.connect_ex((REMOTE, 9))
        finally:
            probe.close()

    parent = tmp_path / "parent.sftrace"
    with record("fork-net", output=parent):
        run_agent()
    result = fork(parent, step=2, entrypoint=run_agent, output=tmp_path / "child.sftrace")
    assert result.status == "completed", result.error


class UdpEcho(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data, sock = self.request
        sock.sendto(data.upper(), self.client_address)


def test_a_datagram_to_an_address_not_allowed_is_refused_before_it_is_sent_and_allowed_ones_work(
    bundle: Path,
) -> None:
    # UDP needs no connect: sendto/sendmsg name the address themselves (a metrics client, a DNS library)
    with socketserver.ThreadingUDPServer(("127.0.0.1", 0), UdpEcho) as srv:
        threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # every port of 127.0.0.1: the server's reply goes to the client's ephemeral port
        with ReplaySession.from_trace(bundle, allow_hosts=["127.0.0.1"]) as session, udp:
            udp.settimeout(5)
            udp.sendto(b"ping", srv.server_address)
            assert udp.recv(16) == b"PING"
            with pytest.raises(ReplayPolicyError):  # another loopback address stays sealed
                udp.sendto(b"x", ("127.0.0.2", 8125))
            with pytest.raises(ReplayPolicyError) as info:
                udp.sendto(b"x", (REMOTE, 53))
            assert f"{REMOTE}:53" in str(info.value)
            with pytest.raises(ReplayPolicyError):
                udp.sendto(b"x", 0, (REMOTE, 53))
            with pytest.raises(ReplayPolicyError):
                udp.sendmsg([b"x"], [], 0, (REMOTE, 53))
        srv.shutdown()
    assert session.divergence is not None
    assert session.divergence.code == "network_sealed"


def test_the_legacy_resolvers_are_sealed_too(bundle: Path) -> None:
    # gethostbyname()/gethostbyname_ex() send a DNS query as getaddrinfo() does; loopback names resolve
    with ReplaySession.from_trace(bundle):
        assert socket.gethostbyname("localhost") == "127.0.0.1"
        for resolve in (socket.gethostbyname, socket.gethostbyname_ex):
            with pytest.raises(ReplayPolicyError) as info:
                resolve("api.openai.com")
            assert "api.openai.com" in str(info.value)


def test_an_ipv4_mapped_address_is_its_ipv4_address(bundle: Path, server: tuple[str, int]) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 sockets here")
    mapped = ("::ffff:127.0.0.1", server[1])
    with ReplaySession.from_trace(bundle), socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
        with pytest.raises(ReplayPolicyError) as info:
            sock.connect(mapped)
        assert f"127.0.0.1:{server[1]}" in str(info.value)
    allowed = [f"127.0.0.1:{server[1]}"]
    with ReplaySession.from_trace(bundle, allow_hosts=allowed), socket.socket(socket.AF_INET6) as sock:
        sock.settimeout(5)
        try:
            sock.connect(mapped)
        except OSError as exc:  # no dual-stack sockets here (ReplayPolicyError is no OSError: it fails)
            pytest.skip(f"IPv4-mapped addresses unsupported here: {exc}")
        sock.sendall(b"ping")
        assert sock.recv(16) == b"PING"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX")
def test_a_child_forked_during_a_sealed_replay_is_sealed_too_and_its_refusal_is_the_divergence(
    bundle: Path,
) -> None:
    # a forked child forgets the parent's session (its instrumented calls run untouched: trace.boundary),
    # so an LLM call it makes would leave the process: the seal must still refuse it there, and the parent's
    # verdict must say so even though the child swallowed the error
    with ReplaySession.from_trace(bundle) as session:
        lookup("Paris")
        pid = os.fork()
        if pid == 0:  # the child: exit 0 only when the connection was refused by the seal
            code = 1
            try:
                socket.create_connection((REMOTE, 443), timeout=5).close()
            except ReplayPolicyError as exc:
                code = 0 if exc.code == "network_sealed" else 2
            except BaseException:
                code = 3
            os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert session.divergence is not None
    assert session.divergence.code == "network_sealed"
    assert "a child process forked during the replay" in str(session.divergence)
    assert f"{REMOTE}:443" in str(session.divergence)


def test_the_process_talking_to_itself_stays_open(bundle: Path) -> None:
    """socketpair (asyncio's self-pipe, multiprocessing), subprocess pipes and a thread pool keep working."""
    import subprocess
    import sys

    async def main() -> int:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: 41) + 1

    with ReplaySession.from_trace(bundle) as session:
        lookup("Paris")
        left, right = socket.socketpair()
        with left, right:
            left.sendall(b"x")
            assert right.recv(1) == b"x"
        assert asyncio.run(main()) == 42
        done = subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, text=True, check=True)
        assert done.stdout.strip() == "1"
    assert session.divergence is None
