"""The Stepfork pytest plugin (entry point ``pytest11``; docs/pytest-plugin.md).

``@pytest.mark.stepfork("bundles/checkout.sftrace", mode="frozen")`` runs the test body under a
:class:`~stepfork.replay.session.ReplaySession` of that bundle (the path is relative to the test file's
directory) and checks at the end that every recorded call was consumed (``verify_complete``).
``pytest --stepfork-record`` records the marked tests into their bundles instead (overwriting them).
``mode="forbidden"`` needs no bundle: every instrumented call the body reaches fails before it runs.

Rules (issue 6, "pytest plugin"): a missing bundle in a replay mode is an error of the test
(:class:`StepforkBundleMissingError`), never a silent live run; a body that fails keeps its own failure
(completeness is checked only when the body passed). Stepfork sees only instrumented calls: an
uninstrumented HTTP request inside the test body is neither recorded nor refused.

Other keyword options go to the ReplaySession: ``live_llms``, ``allow_live_tools``, ``approve``,
``ordering``, ``ignore`` (``ignore={"tool": ["$.requested_at"]}``: input paths whose differences match) and
``raise_as`` (``raise_as={"app.errors.RateLimited": RateLimited}``: a recorded failure of
that type is raised as the test's own class, so the agent's ``except`` path runs; ignored when recording).

The ``stepfork`` fixture gives the test the active session (``ReplaySession``, ``RecordingSession`` or
the forbidding handler), or None when the test has no marker.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from stepfork.replay.errors import ReplayPolicyError
from stepfork.replay.session import ReplaySession
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.recording import RecordingSession

T = TypeVar("T")

MARKER = "stepfork"
RECORD_OPTION = "--stepfork-record"
_REPLAY_OPTIONS = frozenset({"live_llms", "allow_live_tools", "approve", "ordering", "raise_as", "ignore"})


class StepforkBundleMissingError(FileNotFoundError):
    """A test marked for replay names a bundle that does not exist.

    Attributes:
        path: the bundle path the marker resolved to (absolute).
    """

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"stepfork bundle {str(path)!r} does not exist; record it with `pytest {RECORD_OPTION}` "
            "(the test is not run live)"
        )
        self.path = path


class ForbiddingHandler:
    """A boundary handler that refuses every instrumented call before its body runs (``mode="forbidden"``).

    ``handle``/``ahandle`` raise :class:`~stepfork.replay.errors.ReplayPolicyError` with code
    ``forbidden_mode``; ``refused`` lists the labels of the calls refused, in order.
    """

    is_replay = True

    def __init__(self) -> None:
        self.refused: list[str] = []

    def _refuse(self, call: BoundaryCall) -> ReplayPolicyError:
        self.refused.append(call.label)
        return ReplayPolicyError(
            f"this test is marked stepfork mode 'forbidden': {call.kind} call {call.label!r} was refused",
            code="forbidden_mode",
        )

    def handle(self, call: BoundaryCall, body: Callable[[], T], *, orphan: bool = False) -> T:
        """Raise ReplayPolicyError ``forbidden_mode``; ``body`` never runs."""
        raise self._refuse(call)

    async def ahandle(
        self, call: BoundaryCall, body: Callable[[], Awaitable[T]], *, orphan: bool = False
    ) -> T:
        """Raise ReplayPolicyError ``forbidden_mode``; ``body`` never runs."""
        raise self._refuse(call)


@dataclass
class StepforkMarker:
    """A parsed ``stepfork`` marker: ``path`` (absolute, None for forbidden), ``mode``, ``agent`` and the
    extra ReplaySession keyword options."""

    path: Path | None
    mode: str
    agent: str
    options: dict[str, Any] = field(default_factory=dict)


def parse_marker(item: pytest.Item) -> StepforkMarker | None:
    """Read the closest ``stepfork`` marker of ``item``; None when it has none.

    Raises:
        pytest.UsageError: no path for a mode that needs a bundle, or an unknown keyword option.
    """
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    kwargs = dict(marker.kwargs)
    mode = str(kwargs.pop("mode", "frozen"))
    agent = str(kwargs.pop("agent", item.name))
    raw_path = marker.args[0] if marker.args else kwargs.pop("path", None)
    unknown = set(kwargs) - _REPLAY_OPTIONS
    if unknown:
        raise pytest.UsageError(f"{item.nodeid}: unknown stepfork marker option(s) {sorted(unknown)}")
    if raw_path is None:
        if mode != "forbidden":
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.stepfork needs a bundle path for {mode!r}")
        return StepforkMarker(None, mode, agent, kwargs)
    path = Path(raw_path)
    if not path.is_absolute():
        path = Path(item.path).parent / path
    return StepforkMarker(path, mode, agent, kwargs)


_SESSION = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--stepfork-record``: record marked tests into their bundles instead of replaying them."""
    group = parser.getgroup("stepfork")
    group.addoption(
        RECORD_OPTION,
        action="store_true",
        default=False,
        help="record tests marked @pytest.mark.stepfork into their bundles (overwrites) instead of replaying",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``stepfork`` marker (so ``--strict-markers`` accepts it)."""
    config.addinivalue_line(
        "markers",
        "stepfork(path=None, mode='frozen', agent=None, **options): replay the test under a Stepfork bundle "
        "(or record it with --stepfork-record); mode='forbidden' refuses every instrumented call",
    )


def _build_session(item: pytest.Item, marker: StepforkMarker) -> Any:
    if marker.mode == "forbidden":
        return ForbiddingHandler()
    assert marker.path is not None
    if item.config.getoption(RECORD_OPTION):
        marker.path.parent.mkdir(parents=True, exist_ok=True)
        return RecordingSession(marker.agent, output=marker.path, overwrite=True)
    if not marker.path.exists():
        raise StepforkBundleMissingError(marker.path)
    return ReplaySession.from_trace(marker.path, marker.mode, **marker.options)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Build the test's session before its fixtures run (a missing bundle errors the test here)."""
    marker = parse_marker(item)
    if marker is not None:
        item.stash[_SESSION] = _build_session(item, marker)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Run the body with the session active; when it passed, check the replay consumed every call."""
    session = item.stash.get(_SESSION, None)
    if session is None:
        return (yield)
    if isinstance(session, RecordingSession):
        with session:
            return (yield)
    token = None
    if isinstance(session, ForbiddingHandler):
        token = boundary.activate(session)
        try:
            return (yield)
        finally:
            boundary.deactivate(session, token)
    with session:
        result = yield
    session.verify_complete()  # only reached when the body passed: its own failure stays the report
    return result


@pytest.fixture
def stepfork(request: pytest.FixtureRequest) -> Any:
    """The Stepfork session of this test: a ReplaySession, a RecordingSession (``--stepfork-record``), the
    ForbiddingHandler (``mode="forbidden"``), or None when the test has no ``stepfork`` marker."""
    return request.node.stash.get(_SESSION, None)
