"""A check's reports stay readable when an agent's stderr holds control characters: the JUnit XML parses
and the summary shows escapes, not the raw characters a terminal acts on."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from stepfork.analysis import BundleVerdict, CheckResult

# What `the replay's process died: <last stderr line>` repeats of an agent that wrote these and os._exit(1)
DIED = "the replay's process died: boom\x00 \x1b[31mred\x1b[0m \ufffe"


def _result() -> CheckResult:
    return CheckResult(
        corpus="runs",
        entrypoint="agent:run",
        executor="local (1 jobs)",
        verdicts=(
            BundleVerdict(
                bundle="runs/a\x1b[2J.sftrace",
                verdict="COULD NOT EXECUTE",
                outcome="could_not_execute",
                reason="process_died",
                detail=DIED,
                agent_name="agent\x07",
            ),
            BundleVerdict(
                bundle="runs/b.sftrace",
                verdict="DIVERGED",
                outcome="failed",
                code="behavior_mismatch",
                detail="output differs: \x00\x1b[1m",
            ),
        ),
    )


def test_junit_with_control_characters_parses(tmp_path: Path) -> None:
    path = _result().write_junit(tmp_path / "check.xml")
    root = ET.parse(path).getroot()
    error = root.find("testsuite/testcase/error")
    failure = root.find("testsuite/testcase/failure")
    assert error is not None
    assert failure is not None
    assert error.get("message") == "the replay's process died: boom\\x00 \\x1b[31mred\\x1b[0m \\ufffe"
    assert failure.get("message") == failure.text == "output differs: \\x00\\x1b[1m"
    names = [case.get("name") for case in root.iter("testcase")]
    assert names == ["runs/a\\x1b[2J.sftrace", "runs/b.sftrace"]
    written = path.read_text(encoding="utf-8")
    assert "\x1b" not in written
    assert "\x00" not in written


def test_summary_shows_control_characters_escaped() -> None:
    text = str(_result())
    assert not {"\x1b", "\x00", "\x07"} & set(text)
    assert "process_died: the replay's process died: boom\\x00 \\x1b[31mred" in text
    assert "runs/a\\x1b[2J.sftrace" in text
