"""The pytest marker seals the network in frozen, forbidden and manual modes (NEWCOMER2 finding 18).

``mode="forbidden"`` left the network open, while docs/replay.md says no connection leaves the process in
the forbidden mode. A test file whose tests reach a real HTTP server on 127.0.0.1 from their body runs in a
pytest subprocess; outcomes come from the JUnit XML report, the server counts every request.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepfork.trace import record

from ..e2e.conftest import counting_server

TESTS = textwrap.dedent(
    """
    import os
    import subprocess
    import urllib.request

    import pytest

    URL = f"http://127.0.0.1:{os.environ['PORT']}/config"


    def fetch():
        return urllib.request.urlopen(URL, timeout=5).read()


    @pytest.mark.stepfork(mode="forbidden")
    def test_forbidden_body_reaches_the_network():
        fetch()


    @pytest.mark.stepfork(mode="forbidden")
    def test_forbidden_body_swallows_the_refusal():
        try:
            fetch()
        except Exception:
            pass


    @pytest.mark.stepfork(mode="forbidden")
    def test_forbidden_body_starts_a_program():
        try:
            subprocess.run(["curl", "-s", URL], check=False)
        except OSError:
            pass


    @pytest.mark.stepfork(mode="forbidden", allow_hosts=[f"127.0.0.1:{os.environ['PORT']}"])
    def test_forbidden_with_the_host_allowed():
        assert fetch()


    @pytest.mark.stepfork("run.sftrace")
    def test_frozen_body_reaches_the_network():
        fetch()
    """
)


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    with counting_server() as srv:
        yield srv


def run_pytest(folder: Path, port: int) -> dict[str, str]:
    (folder / "test_marked.py").write_text(TESTS)
    with record("marked", output=folder / "run.sftrace"):
        pass
    report = folder / "report.xml"
    command = [sys.executable, "-m", "pytest", "test_marked.py", "-p", "no:cacheprovider", "-p", "no:xdist"]
    command += [f"--junitxml={report}", "-q", "--rootdir", str(folder)]
    env = {**os.environ, "PORT": str(port)}
    subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False, timeout=120)
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        failures = [child for child in case if child.tag in ("failure", "error")]
        message = (failures[0].get("message", "") or "failed") if failures else "passed"
        outcomes[case.get("name", "")] = message
    return outcomes


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_frozen_and_forbidden_markers_seal_the_network(
    tmp_path: Path, server: http.server.ThreadingHTTPServer
) -> None:
    outcomes = run_pytest(tmp_path, server.server_address[1])
    for name in (
        "test_forbidden_body_reaches_the_network",
        "test_forbidden_body_swallows_the_refusal",
        "test_frozen_body_reaches_the_network",
    ):
        assert "network sealed during" in outcomes[name], (name, outcomes[name])
    assert "forbidden replay" in outcomes["test_forbidden_body_reaches_the_network"]
    assert "child process refused" in outcomes["test_forbidden_body_starts_a_program"]
    assert outcomes["test_forbidden_with_the_host_allowed"] == "passed"
    assert server.hits == 1  # type: ignore[attr-defined]  # the allowed test's request only
