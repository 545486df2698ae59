"""``pytest --stepfork-html DIR``: the replay report of every failing Stepfork test, as an HTML page in DIR
(entry point ``pytest11``; docs/view.md "pytest").

Two kinds of test count: a test marked ``@pytest.mark.stepfork`` (the report of the session its body ran
under: the recording beside what the body did, and where it diverged) and an exported regression test
(``stepfork export``: its constants are read with ``ast`` and the replay is run again with
:func:`stepfork.replay.outcome.replay_entrypoint`, so the report is the one ``stepfork replay --html``
writes). Each page is ``DIR/<test id>.html`` (characters outside ``[A-Za-z0-9._-]`` become ``_``),
replaced on every run. When pytest-html is active, the test's row links to the page. A report that cannot
be written is a warning, never a change of the test's outcome.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

OPTION = "--stepfork-html"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_LINKS = pytest.StashKey[Path]()


class StepforkReportWarning(UserWarning):
    """A ``--stepfork-html`` report could not be written (the reason in the message)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--stepfork-html DIR``."""
    parser.getgroup("stepfork").addoption(
        OPTION,
        metavar="DIR",
        default=None,
        help="write the replay report (HTML) of every failing Stepfork test (marked or exported) into DIR",
    )


def report_name(nodeid: str) -> str:
    """The file name of a test's report: its node id with unsafe characters replaced, plus ``.html``."""
    return _UNSAFE.sub("_", nodeid).strip("_")[:200] + ".html"


def _marked_report(
    item: pytest.Item, session: Any, raised: BaseException | None, target: Path
) -> Path | None:
    from stepfork.analysis.view import write_replay_view
    from stepfork.replay.outcome import session_outcome
    from stepfork.replay.pytest_plugin import parse_marker
    from stepfork.replay.session import ReplaySession

    marker = parse_marker(item)
    if not isinstance(session, ReplaySession) or marker is None or marker.path is None:
        return None
    outcome = session_outcome(session, session.trace, raised)
    return write_replay_view(outcome, marker.path, target, overwrite=True)


def _exported_report(item: pytest.Item, target: Path) -> Path | None:
    from stepfork.analysis.export import read_exported_constants
    from stepfork.analysis.view import write_replay_view
    from stepfork.replay.outcome import replay_entrypoint

    path = Path(str(item.path))
    source = path.read_text(encoding="utf-8")
    if "run_regression_case" not in source:
        return None
    constants = read_exported_constants(source, filename=str(path))
    if not constants.get("TRACE_PATH") or not constants.get("ENTRYPOINT"):
        return None
    bundle = path.parent / constants["TRACE_PATH"]
    root = constants.get("IMPORT_ROOT")
    outcome = replay_entrypoint(
        bundle,
        constants["ENTRYPOINT"],
        mode=constants.get("MODE") or "frozen",
        live_llms=set(constants.get("LIVE_LLMS") or ()) or None,
        allow_live_tools=set(constants.get("ALLOW_LIVE_TOOLS") or ()) or None,
        import_root=path.parent / root if root is not None else None,
        raise_as=constants.get("RAISE_AS"),
    )
    return write_replay_view(outcome, bundle, target, overwrite=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """After a failing call phase of a Stepfork test, write its report and link it from pytest-html."""
    report = yield
    directory = item.config.getoption(OPTION)
    if directory is None or report.when != "call" or not report.failed:
        return report
    target = Path(directory) / report_name(item.nodeid)
    try:
        from stepfork.replay.pytest_plugin import session_of

        session = session_of(item)
        raised = call.excinfo.value if call.excinfo is not None else None
        if session is not None:
            written = _marked_report(item, session, raised, target)
        else:
            written = _exported_report(item, target)
    except Exception as exc:  # a report is a by-product: never change the test's own outcome
        warnings.warn(
            f"{item.nodeid}: no Stepfork report: {type(exc).__name__}: {exc}",
            StepforkReportWarning,
            stacklevel=1,
        )
        return report
    if written is None:
        return report
    item.stash[_LINKS] = written
    html_plugin = item.config.pluginmanager.getplugin("html")
    if html_plugin is not None:
        from importlib import import_module

        extras = import_module("pytest_html.extras")  # optional; not installed where mypy runs
        report.extras = [
            *getattr(report, "extras", []),
            extras.url(written.resolve().as_uri(), name="Stepfork report"),
        ]
    report.sections.append(("Stepfork report", str(written)))
    return report
