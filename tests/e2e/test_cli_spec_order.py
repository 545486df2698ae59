"""Differences from spec/cli-reference.txt a newcomer found (NEWCOMER2 21, 22): ``minimize`` printed its
report header before refusing a mode the spec lists; ``replay``'s header put Agent last (the spec: Trace,
Agent, Entrypoint, Mode); ``minimize --overwrite``, given for the output bundle, also replaced an unrelated
file at ``--html``."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run_cli

MINIMIZE = ("minimize", "notify.sftrace", "-e", "quickstart:run_agent", "--expect-output", "expected.json")


@pytest.mark.parametrize("mode", ["forbidden", "manual", "derived", "Manual"])
def test_minimize_refuses_a_mode_in_one_line_before_its_header(quickstart: Path, mode: str) -> None:
    result = run_cli(*MINIMIZE, "-o", "m.sftrace", "--mode", mode, cwd=quickstart)
    assert (result.code, result.out) == (2, ""), result.text
    assert len(result.err.strip().splitlines()) == 1
    assert f"'{mode.lower()}'" in result.err
    assert not (quickstart / "m.sftrace").exists()


def test_minimize_refuses_an_output_over_its_input_before_its_header(quickstart: Path) -> None:
    result = run_cli(*MINIMIZE, "-o", "notify.sftrace", "--overwrite", cwd=quickstart)
    assert (result.code, result.out) == (2, ""), result.text
    assert "overlaps the input bundle" in result.err


def test_replay_prints_its_header_in_the_specs_order(quickstart: Path) -> None:
    result = run_cli("replay", "notify.sftrace", "--entrypoint", "quickstart:run_agent", cwd=quickstart)
    assert result.code == 0, result.text
    head = result.out.splitlines()[:7]
    assert head == [
        "Stepfork Replay",
        "",
        "Trace         notify.sftrace",
        "Agent         notify-agent",
        "Entrypoint    quickstart:run_agent",
        "Mode          frozen",
        "Network       sealed",
    ]
    assert result.out.count("Agent ") == 1


def test_minimize_overwrite_never_replaces_a_file_that_is_not_its_report(quickstart: Path) -> None:
    notes = quickstart / "notes.html"
    notes.write_text("my notes\n", encoding="utf-8")
    result = run_cli(*MINIMIZE, "-o", "m.sftrace", "--overwrite", "--html", "notes.html", cwd=quickstart)
    assert (result.code, result.out) == (2, ""), result.text
    assert result.err.strip() == (
        "notes.html exists and is not an HTML report Stepfork wrote; --overwrite replaces the output bundle "
        "and an earlier report only, never another file. Remove it or choose another --html path."
    )
    assert notes.read_text(encoding="utf-8") == "my notes\n"
    assert not (quickstart / "m.sftrace").exists()


def test_minimize_overwrite_replaces_its_earlier_report(quickstart: Path) -> None:
    args = (*MINIMIZE, "-o", "m.sftrace", "--overwrite", "--html", "m.html")
    first = run_cli(*args, cwd=quickstart)
    assert first.code == 0, first.text
    page = quickstart / "m.html"
    page.write_bytes(page.read_bytes().replace(b"</body>", b"<!-- earlier --></body>"))
    again = run_cli(*args, cwd=quickstart)
    assert again.code == 0, again.text
    assert b"<!-- earlier -->" not in page.read_bytes()
    assert page.read_bytes().startswith(b"<!DOCTYPE html>")
