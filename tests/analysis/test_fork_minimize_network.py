"""``fork`` and ``minimize`` take the replay's network options (issue 11): sealed by default in their
frozen replays (an uninstrumented outbound connection fails with ``network_sealed``), ``network="open"``
(``--allow-network``) and ``allow_hosts`` (``--allow-host``) let it through.

Every connection that gets through goes to a real echo server on 127.0.0.1, named ``127.1`` (the short
form of 127.0.0.1 that inet_aton accepts): the seal does not take that name for loopback (not a canonical
address, not a local name), so it refuses it unless allowed, yet the traffic never leaves the machine.
"""

from __future__ import annotations

import socketserver
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepfork.analysis import MinimizeError, fork, minimize_trace
from stepfork.trace import Trace, record, trace_tool

ALIAS = "127.1"


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(self.request.recv(1024).upper())


@pytest.fixture
def port() -> Iterator[int]:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo) as srv:
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        yield srv.server_address[1]
        srv.shutdown()


@trace_tool
def lookup(city: str) -> str:
    return f"{city}: sunny"


def ask(port: int) -> bytes:
    import socket

    with socket.create_connection((ALIAS, port), timeout=5) as conn:  # not instrumented
        conn.sendall(b"select 1")
        return conn.recv(1024)


FORK_AGENT = """
import os
import socket

from stepfork.trace import trace_tool


@trace_tool
def lookup(city: str) -> str:
    return f"{city}: sunny"


def run_agent():
    first = lookup("Paris")
    with socket.create_connection(("127.1", int(os.environ["NET_TEST_PORT"])), timeout=5) as conn:
        conn.sendall(b"select 1")
        db = conn.recv(1024).decode()
    return {"first": first, "second": lookup("Lyon"), "third": lookup("Nice"), "db": db}
"""


def stepfork(*args: str) -> int:
    """The real command line, in this process: its exit status."""
    from stepfork.cli.app import main

    with pytest.raises(SystemExit) as done:
        main(list(args))
    return int(done.value.code or 0)


def test_fork_is_sealed_before_the_fork_point_unless_allowed(
    tmp_path: Path, port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def agent() -> dict[str, object]:
        first = lookup("Paris")
        db = ask(port).decode()  # before the fork point: the run is still a frozen replay here
        return {"first": first, "second": lookup("Lyon"), "third": lookup("Nice"), "db": db}

    parent = tmp_path / "parent.sftrace"
    with record("fork-net", output=parent):
        agent()
    # fork at the third lookup: the first two are frozen, the third runs live
    step = [e.step for e in Trace.load(parent).events if e.type == "tool_call"][2]

    sealed = fork(
        parent, step=step, entrypoint=agent, output=tmp_path / "a.sftrace", allow_live_tools=["lookup"]
    )
    assert sealed.status == "failed"
    assert "ReplayPolicyError" in str(sealed.error)
    assert f"{ALIAS}:{port}" in str(sealed.error)
    assert "--allow-network" in str(sealed.error)

    for options in ({"network": "open"}, {"allow_hosts": [ALIAS]}):
        out = tmp_path / f"{sorted(options)[0]}.sftrace"
        done = fork(parent, step=step, entrypoint=agent, output=out, allow_live_tools=["lookup"], **options)
        assert (done.status, done.error) == ("completed", None)
        assert done.result == {
            "first": "Paris: sunny",
            "second": "Lyon: sunny",
            "third": "Nice: sunny",
            "db": "SELECT 1",
        }

    # the same through `stepfork fork` (an agent module in the working directory)
    (tmp_path / "fork_net_agent.py").write_text(FORK_AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NET_TEST_PORT", str(port))
    fork_args = ["fork", str(parent), "--step", str(step), "-e", "fork_net_agent:run_agent"]
    fork_args += ["--allow-live-tool", "lookup"]
    assert stepfork(*fork_args, "-o", "cli-sealed.sftrace") == 1  # the entrypoint raised
    assert f"{ALIAS}:{port}" in capsys.readouterr().out
    assert stepfork(*fork_args, "-o", "cli-host.sftrace", "--allow-host", ALIAS) == 0
    assert stepfork(*fork_args, "-o", "cli-open.sftrace", "--allow-network") == 0


AGENT = """
import socket

from stepfork.trace import trace_tool


@trace_tool
def lookup(city: str) -> str:
    return city


def run_agent():
    lookup("Paris")
    with socket.create_connection(("{alias}", {port}), timeout=5) as conn:  # not instrumented
        conn.sendall(b"ping")
        conn.recv(1024)
    raise ValueError("the agent failed after its database call")
"""


def test_minimize_is_sealed_unless_the_network_or_the_host_is_allowed(
    tmp_path: Path, port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "minimize_net_agent.py").write_text(textwrap.dedent(AGENT.format(alias=ALIAS, port=port)))
    monkeypatch.syspath_prepend(str(tmp_path))
    import minimize_net_agent  # type: ignore[import-not-found]

    with pytest.raises(ValueError, match="the agent failed"), record("m", output=tmp_path / "m.sftrace"):
        minimize_net_agent.run_agent()

    def minimize(out: str, **options: object) -> object:
        return minimize_trace(
            tmp_path / "m.sftrace",
            "minimize_net_agent:run_agent",
            output=tmp_path / out,
            import_root=tmp_path,
            workers=1,
            **options,
        )

    with pytest.raises(MinimizeError, match=r"replay error \(network_sealed\)") as sealed:
        minimize("sealed.sftrace")  # the agent's own failure is never reached: nothing to minimize
    # the host and the fix, as replay and fork say them
    assert f"{ALIAS}:{port}" in str(sealed.value)
    assert f"--allow-host {ALIAS}" in str(sealed.value)
    assert "--allow-network" in str(sealed.value)
    allowed = minimize("open.sftrace", network="open")
    assert (allowed.signature.kind, allowed.signature.detail) == ("exception", "ValueError")
    # through `stepfork minimize`, the host allowed
    monkeypatch.chdir(tmp_path)
    assert stepfork("minimize", "m.sftrace", "-e", "minimize_net_agent:run_agent", "--allow-host", ALIAS) == 0
    assert "ValueError" in capsys.readouterr().out
