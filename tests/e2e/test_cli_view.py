"""`stepfork view`, `replay --html` and `minimize --html` end to end (issue 16; docs/view.md): where the
page goes, nothing overwritten without --overwrite, one-line errors with exit 2, and the data each page
carries (the browser tests in tests/browser check what the page shows)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from .conftest import ENTRYPOINTS, GOLDEN, run_cli


def _meta(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="sf-meta">(.*?)</script>', text, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_view_writes_beside_the_bundle_and_refuses_to_overwrite(quickstart: Path) -> None:
    result = run_cli("view", "notify.sftrace", cwd=quickstart)
    assert result.code == 0, result.text
    page = quickstart / "notify.html"
    assert result.out.strip() == f"Wrote {Path('notify.html')}"
    meta = _meta(page)
    assert meta["view"] == "trace"
    assert meta["summary"]["agent_name"] == "notify-agent"
    assert meta["summary"]["integrity"] == "verified"

    page.write_text("keep me")
    again = run_cli("view", "notify.sftrace", cwd=quickstart)
    assert again.code == 2
    assert again.err.strip() == "notify.html exists; pass --overwrite to replace it."
    assert page.read_text() == "keep me"
    forced = run_cli("view", "notify.sftrace", "--overwrite", cwd=quickstart)
    assert forced.code == 0, forced.text
    assert _meta(page)["view"] == "trace"


def test_view_output_option_and_the_diff_of_two_bundles(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "d.html"
    result = run_cli("view", GOLDEN / "diff_baseline.sftrace", GOLDEN / "diff_changed.sftrace", "-o", out)
    assert result.code == 0, result.text
    meta = _meta(out)
    assert meta["view"] == "diff"
    assert meta["equivalent"] is False
    changed = [s for s in meta["steps"] if s["kind"] == "changed"]
    assert {c["pointer"] for c in changed[0]["changes"]} == {"/output/price", "/output/selected_flight"}


def test_view_of_an_unreadable_bundle_is_one_line_exit_2(tmp_path: Path) -> None:
    missing = run_cli("view", tmp_path / "nope.sftrace", cwd=tmp_path)
    assert missing.code == 2
    assert missing.err.startswith("Unreadable bundle:")
    assert "Traceback" not in missing.text
    assert not list(tmp_path.glob("*.html"))
    three = run_cli("view", "a.sftrace", "b.sftrace", "c.sftrace", cwd=tmp_path)
    assert three.code == 2
    assert "one bundle, or BASELINE CANDIDATE" in three.err


def test_replay_html_writes_the_report_with_the_divergence_path(golden_copy, tmp_path: Path) -> None:
    bundle = golden_copy("successful_run")
    report = tmp_path / "replay.html"
    args = ("replay", bundle, "--entrypoint", "golden_agents:weather_agent_other_city", "--html", report)
    result = run_cli(*args, cwd=ENTRYPOINTS)
    assert result.code == 1, result.text  # the replay's own verdict is unchanged
    assert "Status: DIVERGED" in result.out
    meta = _meta(report)
    assert meta["view"] == "replay"
    assert meta["divergence"]["path"] == "$.messages[0].content"
    assert meta["divergence"]["pointer"] == "/messages/0/content"
    assert meta["outcome"]["matching"]["status"] == "DIVERGED"

    again = run_cli(*args, cwd=ENTRYPOINTS)
    assert again.code == 2
    assert "exists; pass --overwrite" in again.err
    assert "Stepfork Replay" not in again.out  # refused before the replay ran
    assert run_cli(*args, "--overwrite", cwd=ENTRYPOINTS).code == 1


AGENT = """
from stepfork.trace import trace_tool

@trace_tool
def fetch(source: int) -> dict:
    return {"source": source, "bad": source in (1, 3)}

def run_agent():
    bad = 0
    for source in range(5):
        try:
            bad += fetch(source)["bad"]
        except Exception:
            pass
    return {"alert": bad >= 2}
"""


def test_minimize_html_writes_kept_and_removed_calls(tmp_path: Path) -> None:
    (tmp_path / "fetch_agent.py").write_text(AGENT)
    record = (
        "from stepfork.trace import record\nimport fetch_agent\n"
        "with record('fetch-agent', output='fetch.sftrace') as s:\n"
        "    s.set_output(fetch_agent.run_agent())\n"
    )
    subprocess.run([sys.executable, "-c", record], cwd=tmp_path, check=True)
    (tmp_path / "expected.json").write_text(json.dumps({"alert": False}))
    result = run_cli(
        "minimize",
        "fetch.sftrace",
        "-e",
        "fetch_agent:run_agent",
        "--expect-output",
        "expected.json",
        "--html",
        "min.html",
        cwd=tmp_path,
    )
    assert result.code == 0, result.text
    meta = _meta(tmp_path / "min.html")
    assert meta["view"] == "minimize"
    assert len(meta["kept_steps"]) == 2
    assert meta["minimize"]["removed_calls"] == 3


def test_open_hands_the_file_url_to_the_system_browser(quickstart: Path, tmp_path: Path) -> None:
    import os

    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(0o755)
    env = {**os.environ, "BROWSER": str(browser)}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "stepfork"), "view", "notify.sftrace", "--open"],
        cwd=quickstart,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert opened.read_text() == (quickstart / "notify.html").resolve().as_uri()
