"""The network seal is up while the entrypoint's module is imported (issue 29's promise, NEWCOMER finding 3).

A module that fetches its configuration at import (``CONFIG = requests.get(...).json()`` at the top of
the agent) ran that request live under ``replay -e``, ``check``, an exported test, ``minimize`` and
``fork`` while the report said "Network sealed": the import happened before the session sealed anything.
Every command now imports the entrypoint under the seal; a refused connection is the replay's divergence
(DIVERGED, exit 1, ``network_sealed``, naming the host and the module's import), and the server, a real
HTTP server on 127.0.0.1 counting its requests, sees none of them.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import cli_env, counting_server, run_cli


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    with counting_server() as srv:
        yield srv


AGENT = """
import sys
import urllib.request

try:  # the agent's configuration, fetched when the module is imported
    CONFIG = __import__("json").loads(urllib.request.urlopen("{url}", timeout=5).read())
except Exception:
    CONFIG = {{"ok": "fallback"}}

from stepfork import record, trace_tool


@trace_tool
def lookup(q: str) -> dict:
    return {{"q": q}}


def run_agent():
    return {{"q": lookup("a")["q"], "configured": CONFIG.get("ok") is True}}


if __name__ == "__main__":
    with record("importnet", output=sys.argv[1], overwrite=True) as session:
        session.set_output(run_agent())
"""

CONNECTS = """
import socket
import sys

CONNECTION = socket.create_connection(("127.0.0.1", {port}), timeout=5)  # kept open for the run

from stepfork import record, trace_tool


@trace_tool
def lookup(q: str) -> dict:
    return {{"q": q}}


def run_agent():
    return {{"q": lookup("a")["q"]}}


if __name__ == "__main__":
    with record("connects", output=sys.argv[1], overwrite=True) as session:
        session.set_output(run_agent())
"""


def recorded(work: Path, source: str, name: str = "agent_importnet") -> Path:
    """Write the agent ``source`` as ``name``.py in ``work`` and record its run (its import reaches the
    server once, live, as it did in production); return the bundle."""
    (work / f"{name}.py").write_text(textwrap.dedent(source))
    bundle = work / "run.sftrace"
    subprocess.run(
        [sys.executable, f"{name}.py", str(bundle)], cwd=work, check=True, env=cli_env(), timeout=120
    )
    return bundle


@pytest.fixture
def agent(tmp_path: Path, server: http.server.ThreadingHTTPServer) -> Path:
    host, port = server.server_address[:2]
    recorded(tmp_path, AGENT.format(url=f"http://{host}:{port}/config"))
    assert server.hits == 1  # type: ignore[attr-defined]
    server.hits = 0  # type: ignore[attr-defined]
    return tmp_path


def assert_refused(text: str, server: http.server.ThreadingHTTPServer) -> None:
    assert server.hits == 0, "the module's import reached the server"  # type: ignore[attr-defined]
    port = server.server_address[1]
    assert f"127.0.0.1:{port}" in text
    assert "while the entrypoint's module 'agent_importnet' was imported" in text


def test_replay_imports_the_entrypoint_sealed_and_reports_the_refusal_as_its_divergence(
    agent: Path, server: http.server.ThreadingHTTPServer
) -> None:
    result = run_cli("replay", "run.sftrace", "-e", "agent_importnet:run_agent", "--json", cwd=agent)
    assert result.code == 1, result.text
    report = json.loads(result.out)
    assert report["matching"]["status"] == "DIVERGED"
    assert report["matching"]["code"] == "network_sealed"
    assert_refused(report["matching"]["message"], server)

    text = run_cli("replay", "run.sftrace", "-e", "agent_importnet:run_agent", cwd=agent)
    assert text.code == 1, text.text
    assert "Status: DIVERGED" in text.out
    assert_refused(text.out, server)


def test_allow_host_lets_the_import_through_as_it_lets_the_session(
    agent: Path, server: http.server.ThreadingHTTPServer
) -> None:
    port = server.server_address[1]
    allowed = ("--allow-host", f"127.0.0.1:{port}")
    result = run_cli("replay", "run.sftrace", "-e", "agent_importnet:run_agent", *allowed, cwd=agent)
    assert result.code == 0, result.text
    assert server.hits == 1  # type: ignore[attr-defined]


def test_check_imports_the_entrypoint_sealed_in_its_workers(
    agent: Path, server: http.server.ThreadingHTTPServer
) -> None:
    corpus = agent / "corpus"
    corpus.mkdir()
    (agent / "run.sftrace").rename(corpus / "run.sftrace")
    result = run_cli("check", "corpus", "-e", "agent_importnet:run_agent", "--json", cwd=agent)
    assert result.code == 1, result.text
    (verdict,) = json.loads(result.out)["verdicts"]
    assert (verdict["verdict"], verdict["code"]) == ("DIVERGED", "network_sealed"), verdict
    assert_refused(verdict["detail"], server)


def test_an_exported_test_and_stepfork_run_import_the_entrypoint_sealed(
    agent: Path, server: http.server.ThreadingHTTPServer
) -> None:
    exported = run_cli(
        "export", "run.sftrace", "--pytest", "-e", "agent_importnet:run_agent", "-o", "test_imp.py", cwd=agent
    )
    assert exported.code == 0, exported.text
    assert server.hits == 0  # type: ignore[attr-defined]  # export reads the signature under the seal too
    result = run_cli("run", "test_imp.py", "--json", cwd=agent)
    assert result.code == 1, result.text
    receipt = json.loads(result.out)
    assert receipt["verdict"] == "failed", receipt
    assert_refused(json.dumps(receipt), server)


def test_minimize_refuses_a_failure_the_seal_caused_at_import(
    agent: Path, server: http.server.ThreadingHTTPServer
) -> None:
    (agent / "expected.json").write_text('{"q": "a", "configured": true}')
    result = run_cli(
        "minimize", "run.sftrace", "-e", "agent_importnet:run_agent", "--expect-output", "expected.json",
        "-o", "min.sftrace", cwd=agent,
    )  # fmt: skip
    assert result.code == 1, result.text
    assert "network_sealed" in result.text
    assert server.hits == 0  # type: ignore[attr-defined]


def test_fork_imports_the_entrypoint_sealed_while_its_run_is_frozen(
    agent: Path, server: http.server.ThreadingHTTPServer
) -> None:
    result = run_cli(
        "fork", "run.sftrace", "--step", "2", "-e", "agent_importnet:run_agent", "-o", "f.sftrace", cwd=agent
    )
    assert result.code == 0, result.text
    assert server.hits == 0  # type: ignore[attr-defined]


def test_a_module_whose_import_fails_on_the_refusal_is_diverged_not_unresolvable(
    tmp_path: Path, server: http.server.ThreadingHTTPServer
) -> None:
    """A connection opened at import without a ``try`` (a pooled client, a metrics socket): the refusal
    ends the import, and that is the replay's verdict (DIVERGED, exit 1), not "cannot import" (exit 2)."""
    recorded(tmp_path, CONNECTS.format(port=server.server_address[1]), name="agent_connects")
    result = run_cli("replay", "run.sftrace", "-e", "agent_connects:run_agent", "--json", cwd=tmp_path)
    assert result.code == 1, result.text
    report = json.loads(result.out)
    assert report["matching"]["code"] == "network_sealed"
    assert "agent_connects" in report["matching"]["message"]
    assert report["execution"]["status"] == "RAISED"


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_every_replay_through_a_module_imported_under_the_seal_carries_its_refusals(
    agent: Path, server: http.server.ThreadingHTTPServer
) -> None:
    """Two exported tests of the same agent in one pytest process: the module is imported once, by the
    first; the second replays with what that refused import left, so it fails the same way."""
    for name in ("test_one.py", "test_two.py"):
        exported = run_cli(
            "export", "run.sftrace", "--pytest", "-e", "agent_importnet:run_agent", "-o", name, cwd=agent
        )
        assert exported.code == 0, exported.text
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py", "test_two.py"],
        cwd=agent,
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
    )
    assert "2 failed" in done.stdout, done.stdout + done.stderr
    assert done.stdout.count("while the entrypoint's module 'agent_importnet' was imported") >= 2
    assert server.hits == 0  # type: ignore[attr-defined]
