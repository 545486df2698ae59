"""What an exported test's pytest run said: its exit status and JUnit report as a verdict of ``stepfork run``
(the table of spec "run"): ``passed``, ``failed`` (the check ran and disagreed) or ``could_not_execute``
(the check never ran: no test collected, a collection or fixture error, a check that stopped before
replaying). Split from :mod:`._runner`, which launches the run and checks what it can first.
"""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stepfork.analysis.export._receipt import Receipt

__all__ = ["MESSAGE_LINES", "from_status", "junit_counts", "make_receipt", "utc_now", "zero_counts"]


def utc_now() -> str:
    """Now, UTC, to the second, as receipts write it (``2026-12-02T07:50:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def zero_counts() -> dict[str, int]:
    """The JUnit counts of a run that ran no test."""
    return {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}


MESSAGE_LINES = 16
"""How many lines of the first failure message a receipt's ``detail`` keeps."""


def junit_counts(report: Path) -> tuple[dict[str, int], str]:
    """Counts and the first failure/error message (its first :data:`MESSAGE_LINES` lines) of a JUnit XML
    report written by our pytest child."""
    root = ET.parse(report).getroot()  # noqa: S314 - our own child's report in our temp dir
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in counts:
            counts[key] += int(suite.get(key, "0") or 0)
    message = ""
    for case in root.iter("testcase"):
        for kind in ("failure", "error"):
            element = case.find(kind)
            lines = _failure_lines(element) if element is not None else []
            if lines and not message:
                # the headline and its detail lines (every differing path, the hint), bounded
                message = "\n".join(lines[:MESSAGE_LINES])
    return counts, message


def _failure_lines(element: ET.Element) -> list[str]:
    """The exception text of a JUnit failure/error: pytest's ``E`` lines of the element's text (its
    ``message`` attribute is cut after a few lines), else the ``message`` attribute."""
    shown = [line[1:] for line in (element.text or "").splitlines() if line.startswith("E ")]
    if shown:
        return textwrap.dedent("\n".join(shown)).strip().splitlines()
    return (element.get("message") or "").strip().splitlines()


# How pytest reports a check that stopped before replaying, so never ran: the marker in the failure
# message, and the could_not_execute reason it means. run_regression_case's own prefixes (the bundle is not
# there or cannot be read, e.g. changed on disk after run's pre-check; the entrypoint cannot be called with
# the recorded run input; its module exited while imported; its own replay options cannot run unattended;
# the HTTP capture the bundle was recorded with is missing), a program test whose replay exited 2, and the
# RaiseAsClassError it raises when a RAISE_AS value is not an exception class (``run``'s static pre-check
# cannot tell a function from a class, nor see inside a builtin module).
_RAISE_AS_REFUSED = "stepfork.replay.raise_as.RaiseAsClassError: "


def _never_ran(message: str) -> tuple[str, str] | None:
    """``(reason, what the marker is followed by)`` when ``message``, a failure's text, says the check
    stopped before replaying (see above), else None."""
    from stepfork.replay.regression import (
        BUNDLE_NOT_FOUND,
        BUNDLE_UNREADABLE,
        CAPTURE_MISSING,
        CHECK_NOT_BUILT,
        COULD_NOT_EXECUTE,
        ENTRYPOINT_UNRESOLVABLE,
        PROGRAM_NOT_RUN,
    )

    markers = (
        (BUNDLE_NOT_FOUND, "bundle_missing"),
        (BUNDLE_UNREADABLE, "bundle_unreadable"),
        (ENTRYPOINT_UNRESOLVABLE, "entrypoint_unresolvable"),
        (COULD_NOT_EXECUTE, "entrypoint_uncallable"),
        (CHECK_NOT_BUILT, "check_error"),
        (_RAISE_AS_REFUSED, "raise_as_unresolvable"),
        (CAPTURE_MISSING, "capture_missing"),
        (PROGRAM_NOT_RUN, "program_not_run"),
    )
    for marker, reason in markers:
        for line in message.splitlines():
            _, found, rest = line.partition(marker)
            if found:
                return reason, rest.strip()
    return None


def make_receipt(
    verdict: str, reason: str | None, detail: str, fields: dict[str, Any], counts: dict[str, int]
) -> Receipt:
    """A receipt of ``verdict`` (``passed``, ``failed``, ``could_not_execute``) made now."""
    now = utc_now()
    return Receipt(verdict=verdict, reason=reason, detail=detail, counts=counts, created_at=now, **fields)


def from_status(status: int, counts: dict[str, int], message: str, fields: dict[str, Any]) -> Receipt:
    """Map pytest's exit status and JUnit counts to a verdict (the table of spec "run")."""
    if status == 5 or (status in (0, 1) and counts["tests"] == 0):
        detail = "pytest collected no tests"
        return make_receipt("could_not_execute", "no_tests_collected", detail, fields, counts)
    if counts["errors"] > 0 or status == 2:
        detail = f"a fixture or collection error: {message}" if message else "a fixture or collection error"
        return make_receipt("could_not_execute", "check_error", detail, fields, counts)
    if status == 0 and counts["failures"] == 0:
        return make_receipt("passed", None, "the check ran and agreed", fields, counts)
    stopped = _never_ran(message)
    if stopped is not None:  # the test stopped before replaying: not a caught regression
        reason, why = stopped
        detail = f"{why}; the check cannot run, so this is not a regression"
        return make_receipt("could_not_execute", reason, detail, fields, counts)
    if status == 1 and counts["failures"] > 0:
        detail = f"the check ran and disagreed: {message}" if message else "the check ran and disagreed"
        return make_receipt("failed", None, detail, fields, counts)
    detail = f"pytest exited with status {status}"
    return make_receipt("could_not_execute", "pytest_error", detail, fields, counts)
