"""``pytest --stepfork-html DIR`` (issue 16; docs/view.md "pytest"): a failing marked test and a failing
exported test each get their replay report in DIR; passing and unmarked tests get none. Run in a pytest
subprocess, as a user would."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..conftest import GOLDEN

ENTRYPOINTS = Path(__file__).resolve().parents[1] / "e2e" / "entrypoints"

MARKED = textwrap.dedent(
    """
    import pytest
    from golden_agents import weather_agent, weather_agent_other_city

    @pytest.mark.stepfork("run.sftrace")
    def test_diverges():
        weather_agent_other_city()

    @pytest.mark.stepfork("run.sftrace")
    def test_passes():
        weather_agent()

    def test_unmarked_fails():
        assert False
    """
)


def _meta(page: Path) -> dict:
    match = re.search(r'<script type="application/json" id="sf-meta">(.*?)</script>', page.read_text(), re.S)
    assert match is not None
    return json.loads(match.group(1))


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={"PYTHONPATH": str(ENTRYPOINTS), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_failing_marked_test_gets_its_replay_report(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "successful_run.sftrace", tmp_path / "run.sftrace")
    (tmp_path / "test_agent.py").write_text(MARKED)
    done = _pytest(tmp_path, "--stepfork-html", "reports")
    assert "2 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    pages = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert pages == ["test_agent.py_test_diverges.html"]
    meta = _meta(tmp_path / "reports" / pages[0])
    assert meta["view"] == "replay"
    assert meta["divergence"]["path"] == "$.messages[0].content"
    assert meta["outcome"]["execution"]["status"] == "RAISED"


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_without_the_option_nothing_is_written(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "successful_run.sftrace", tmp_path / "run.sftrace")
    (tmp_path / "test_agent.py").write_text(MARKED)
    done = _pytest(tmp_path)
    assert "2 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".html") == []
    assert not (tmp_path / "reports").exists()


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_failing_exported_test_gets_the_report_of_its_replay(tmp_path: Path) -> None:
    from stepfork.analysis.export import export_pytest_test

    bundle = Path(shutil.copytree(GOLDEN / "successful_run.sftrace", tmp_path / "run.sftrace"))
    export_pytest_test(
        trace_path=bundle,
        output_path=tmp_path / "test_exported.py",
        entrypoint="golden_agents:weather_agent_other_city",
        import_root=ENTRYPOINTS,
    )
    done = _pytest(tmp_path, "--stepfork-html", "reports")
    assert "1 failed" in done.stdout, done.stdout + done.stderr
    pages = list((tmp_path / "reports").iterdir())
    assert len(pages) == 1
    meta = _meta(pages[0])
    assert meta["outcome"]["matching"]["status"] == "DIVERGED"
    assert meta["divergence"]["pointer"] == "/messages/0/content"
