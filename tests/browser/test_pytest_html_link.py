"""With pytest-html active, ``--stepfork-html`` links each failing Stepfork test's row to its replay
report (issue 16), and the linked page opens in Chromium on the divergence."""

from __future__ import annotations

import html
import shutil
import subprocess
import sys
from pathlib import Path

from ..conftest import GOLDEN
from ..plugin.test_pytest_html_reports import ENTRYPOINTS, MARKED
from .conftest import Page


def test_the_pytest_html_row_links_the_stepfork_report(tmp_path: Path, page: Page) -> None:
    shutil.copytree(GOLDEN / "successful_run.sftrace", tmp_path / "run.sftrace")
    (tmp_path / "test_agent.py").write_text(MARKED)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--stepfork-html",
            "reports",
            "--html",
            "report.html",
            "--self-contained-html",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={"PYTHONPATH": str(ENTRYPOINTS), "PATH": "/usr/bin:/bin"},
    )
    assert "2 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    stepfork_page = tmp_path / "reports" / "test_agent.py_test_diverges.html"
    report = html.unescape((tmp_path / "report.html").read_text())
    assert stepfork_page.resolve().as_uri() in report
    assert "Stepfork report" in report
    page.open(stepfork_page)
    assert "$.messages[0].content" in page.page.locator("#divergence").inner_text()
