"""``export --mode`` writes only tests that can run (NEWCOMER2 15; docs/cli.md "export").

``--mode hybrid`` wrote a test without the LLM labels hybrid replay needs (export had no option for them)
and ``--mode manual`` one that asks for an approval nobody can give; both failed every run, and ``stepfork
run`` called that FAILED, a caught regression. Now: hybrid takes ``--live-llm LABEL`` (checked against the
recording), manual is refused in one line, exit 2; and a test whose own replay options cannot run (one an
earlier export wrote, or edited by hand) is ``could_not_execute`` (``check_error``) under ``run``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stepfork.export import run_regression_case
from stepfork.replay.regression import CHECK_NOT_BUILT

from .conftest import run_cli

LABEL = "local/local-notify-1"  # the quickstart's LLM call


def _export(quickstart: Path, *options: str) -> tuple[int, str, str]:
    done = run_cli(
        "export", "notify.sftrace", "-e", "quickstart:run_agent", "-o", "t.py", *options, cwd=quickstart
    )
    return done.code, done.out, done.err


def test_manual_mode_is_refused_in_one_line(quickstart: Path) -> None:
    code, out, err = _export(quickstart, "--mode", "MANUAL")
    assert (code, out) == (2, "")
    assert err.strip() == (
        "--mode manual cannot be exported: it asks a person to approve each call, and an exported test runs "
        "unattended (stepfork replay --mode manual asks on a terminal); export --mode frozen, live, "
        "forbidden or hybrid"
    )
    assert not (quickstart / "t.py").exists()


def test_hybrid_mode_needs_the_labels_of_the_llms_it_runs_live(quickstart: Path) -> None:
    code, out, err = _export(quickstart, "--mode", "hybrid")
    assert (code, out) == (2, ""), err
    assert err.startswith("--mode hybrid needs --live-llm LABEL")
    assert err.count("\n") == 1
    code, _, err = _export(quickstart, "--mode", "hybrid", "--live-llm", "openai/gpt-4o")
    assert code == 2
    assert err.strip() == (
        f"--live-llm names an LLM the recording never calls: openai/gpt-4o (its LLM labels: {LABEL})"
    )
    code, _, err = _export(quickstart, "--live-llm", LABEL)
    assert (code, err.strip()) == (2, "--live-llm is only valid with --mode hybrid.")
    assert not (quickstart / "t.py").exists()


def test_a_hybrid_test_with_its_label_runs_and_passes(quickstart: Path) -> None:
    code, out, err = _export(quickstart, "--mode", "hybrid", "--live-llm", LABEL)
    assert code == 0, err
    assert f"Live LLMs:  {LABEL}" in out
    assert f"LIVE_LLMS = ['{LABEL}']" in (quickstart / "t.py").read_text(encoding="utf-8")
    ran = run_cli("run", "t.py", "--json", cwd=quickstart)
    assert (ran.code, json.loads(ran.out)["verdict"]) == (0, "passed"), ran.text


@pytest.mark.parametrize(
    ("mode", "live_llms", "why"),
    [
        ("manual", "None", "mode 'manual' asks for the approval of each call"),
        ("hybrid", "None", "mode='hybrid' requires explicit live_llms"),
    ],
)
def test_a_test_whose_own_options_cannot_run_could_not_execute(
    quickstart: Path, mode: str, live_llms: str, why: str
) -> None:
    # what an earlier export wrote for these modes (or a hand edit): the check cannot run, it caught nothing
    assert _export(quickstart)[0] == 0
    test = quickstart / "t.py"
    source = test.read_text(encoding="utf-8")
    source = re.sub(r"^MODE = .*$", f"MODE = {mode!r}", source, flags=re.MULTILINE)
    source = re.sub(r"^LIVE_LLMS = .*$", f"LIVE_LLMS = {live_llms}", source, flags=re.MULTILINE)
    test.write_text(source, encoding="utf-8")
    ran = run_cli("run", "t.py", "--json", cwd=quickstart)
    receipt = json.loads(ran.out)
    assert (ran.code, receipt["verdict"], receipt["reason"]) == (2, "could_not_execute", "check_error")
    assert why in receipt["detail"]
    assert "this is not a regression" in receipt["detail"]


def test_run_regression_case_refuses_manual_before_anything_runs(quickstart: Path) -> None:
    with pytest.raises(ValueError) as raised:
        run_regression_case("quickstart:run_agent", quickstart / "notify.sftrace", mode="manual")
    assert str(raised.value).startswith(CHECK_NOT_BUILT + "mode 'manual' asks for the approval")
