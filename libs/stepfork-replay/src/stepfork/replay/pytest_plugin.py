"""The Stepfork pytest plugin (entry point ``pytest11``; docs/pytest-plugin.md).

``@pytest.mark.stepfork("bundles/checkout.sftrace", mode="frozen")`` runs the test body under a
:class:`~stepfork.replay.session.ReplaySession` of that bundle (the path is relative to the test file's
directory) and checks at the end that every recorded call was consumed (``verify_complete``).
``--stepfork-record-mode`` says when a marked test records instead (issue 13; pytest-recording's names):
``none`` (the default: replay only, a missing bundle is an error), ``once`` (record the tests whose bundle
is missing, replay the others), ``rewrite`` (record every marked test, replacing its bundle). The old
``--stepfork-record`` flag is a deprecated alias of ``rewrite`` (with a warning). ``--stepfork-unused``
lists the bundles under the test tree that no collected marked test names.
``mode="forbidden"`` needs no bundle: every instrumented call the body reaches fails before it runs.

Rules (issue 6, "pytest plugin"): a missing bundle in a replay mode is an error of the test
(:class:`StepforkBundleMissingError`), never a silent live run; a body that fails keeps its own failure
(completeness is checked only when the body passed). In ``frozen``, ``forbidden`` and ``manual`` modes the
network is sealed while the body runs (docs/replay.md, "The network is sealed"), as in every replay: an
uninstrumented request in the body or anything it calls is refused (``network_sealed``), and so is a
child process the seal cannot reach (``child_process_refused``); a refusal fails the test even when the
body caught it. ``network="open"``, ``allow_hosts``, ``allow_commands`` open what they name.

Other keyword options go to the ReplaySession: ``live_llms``, ``allow_live_tools``, ``approve``,
``ordering``, ``network``, ``allow_hosts``, ``allow_commands``, ``ignore`` (``ignore={"tool":
["$.requested_at"]}``: input paths whose differences match) and
``raise_as`` (``raise_as={"app.errors.RateLimited": RateLimited}``: a recorded failure of
that type is raised as the test's own class, so the agent's ``except`` path runs; ignored when recording).

The ``stepfork`` fixture gives the test the active session (``ReplaySession``, ``RecordingSession`` or
the forbidding handler), or None when the test has no marker.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from stepfork.replay.errors import ReplayPolicyError
from stepfork.replay.network import Seal, format_host, network_for, parse_allowed_command, parse_allowed_host
from stepfork.replay.network import seal as seal_network
from stepfork.replay.network import unseal as unseal_network
from stepfork.replay.network_notes import SealNotes, end_of_run
from stepfork.replay.session import ReplaySession
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.errors import TraceIntegrityError
from stepfork.trace.recording import RecordingSession

T = TypeVar("T")

MARKER = "stepfork"
RECORD_OPTION = "--stepfork-record"  # deprecated alias of --stepfork-record-mode=rewrite
RECORD_MODE_OPTION = "--stepfork-record-mode"
UNUSED_OPTION = "--stepfork-unused"
RECORD_MODES = ("none", "once", "rewrite")
_REPLAY_OPTIONS = frozenset(
    {"live_llms", "allow_live_tools", "approve", "ordering", "raise_as", "network", "allow_hosts", "ignore"}
    | {"allow_commands"}
)
_FORBIDDEN_OPTIONS = ("network", "allow_hosts", "allow_commands")
"""The marker's options a ``mode="forbidden"`` test takes (the others concern recorded calls it has none
of)."""


class StepforkBundleMissingError(FileNotFoundError):
    """A test marked for replay names a bundle that does not exist.

    Attributes:
        path: the bundle path the marker resolved to (absolute).
    """

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"stepfork bundle {str(path)!r} does not exist; record it with "
            f"`pytest {RECORD_MODE_OPTION}=once` (the test is not run live)"
        )
        self.path = path


class ForbiddingHandler(SealNotes):
    """A boundary handler that refuses every instrumented call before its body runs (``mode="forbidden"``),
    with the network sealed as in every forbidden replay (``network``, ``allow_hosts``, ``allow_commands``:
    as :class:`~stepfork.replay.session.ReplaySession`'s).

    ``handle``/``ahandle`` raise :class:`~stepfork.replay.errors.ReplayPolicyError` with code
    ``forbidden_mode``; ``refused`` lists the labels of the calls refused, in order; ``divergence`` is the
    first refusal the seal recorded (None: none). ``with handler:`` makes it the active handler and seals
    the network until the block ends (and the threads it started, until they end).

    Raises:
        ValueError: ``network`` is not ``"sealed"``, ``"open"`` or None, or a malformed ``allow_hosts`` or
            ``allow_commands`` entry.
    """

    is_replay = True
    mode = "forbidden"

    def __init__(
        self,
        *,
        network: str | None = None,
        allow_hosts: Any = None,
        allow_commands: Any = None,
    ) -> None:
        SealNotes.__init__(self)
        self.refused: list[str] = []
        self.network = network_for(self.mode, network)
        hosts = (format_host(*parse_allowed_host(host)) for host in allow_hosts or ())
        self.allow_hosts = tuple(dict.fromkeys(hosts))
        self.allow_commands = tuple(dict.fromkeys(parse_allowed_command(c) for c in allow_commands or ()))
        self.divergence: ReplayPolicyError | None = None
        self._seal: Seal | None = None
        self._token: Any = None

    def _diverge(self, error: ReplayPolicyError) -> ReplayPolicyError:
        if self.divergence is None:
            self.divergence = error
        return error

    def note_telemetry_refused(self, where: str) -> None:
        """A library's telemetry refused by the seal: not the test's behaviour (issue 30)."""

    def __enter__(self) -> ForbiddingHandler:
        self._token = boundary.activate(self)
        if self.network == "sealed":
            self._seal = seal_network(self, self.allow_hosts, self.allow_commands)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: Any) -> None:
        end_of_run(self, self._seal, exc_type)
        if self._seal is not None:
            unseal_network(self._seal)
            self._seal = None
        boundary.deactivate(self, self._token)

    def verify_complete(self) -> None:
        """Nothing recorded to consume: raise the first refusal the seal recorded while the test ran (a
        connection or a child process the body caught), if any.

        Raises:
            ReplayPolicyError: ``network_sealed`` or ``child_process_refused``.
        """
        if self.divergence is not None:
            raise self.divergence

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
_USED = pytest.StashKey[set[str]]()


class StepforkDeprecationWarning(DeprecationWarning):
    """A Stepfork pytest option that still works but will go (``--stepfork-record``)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--stepfork-record-mode``, ``--stepfork-unused`` and the deprecated ``--stepfork-record``."""
    group = parser.getgroup("stepfork")
    group.addoption(
        RECORD_MODE_OPTION,
        choices=RECORD_MODES,
        default=None,
        help="when tests marked @pytest.mark.stepfork record instead of replaying: none (default: replay "
        "only, a missing bundle is an error), once (record only missing bundles), rewrite (re-record all)",
    )
    group.addoption(
        RECORD_OPTION,
        action="store_true",
        default=False,
        help=f"deprecated: the same as {RECORD_MODE_OPTION}=rewrite",
    )
    group.addoption(
        UNUSED_OPTION,
        action="store_true",
        default=False,
        help="list the .sftrace bundles under the test tree that no collected marked test uses",
    )


def record_mode(config: pytest.Config) -> str:
    """The record mode of this run: ``none``, ``once`` or ``rewrite`` (``--stepfork-record`` is ``rewrite``).

    Raises:
        pytest.UsageError: the deprecated flag contradicts an explicit ``--stepfork-record-mode``.
    """
    mode = config.getoption(RECORD_MODE_OPTION)
    if config.getoption(RECORD_OPTION):
        if mode not in (None, "rewrite"):
            raise pytest.UsageError(
                f"{RECORD_OPTION} means {RECORD_MODE_OPTION}=rewrite "
                f"and contradicts {RECORD_MODE_OPTION}={mode}"
            )
        return "rewrite"
    return str(mode or "none")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``stepfork`` marker (so ``--strict-markers`` accepts it); warn about the deprecated
    ``--stepfork-record``; check the record options agree."""
    config.addinivalue_line(
        "markers",
        "stepfork(path=None, mode='frozen', agent=None, **options): replay the test under a Stepfork bundle "
        f"(or record it, {RECORD_MODE_OPTION}=once|rewrite); "
        "mode='forbidden' refuses every instrumented call",
    )
    config.stash[_USED] = set()
    if config.getoption(RECORD_OPTION, default=False):
        record_mode(config)
        config.issue_config_time_warning(
            StepforkDeprecationWarning(
                f"{RECORD_OPTION} is deprecated: use {RECORD_MODE_OPTION}=rewrite (re-record every marked "
                f"test) or {RECORD_MODE_OPTION}=once (record only missing bundles)"
            ),
            stacklevel=2,
        )


def _build_session(item: pytest.Item, marker: StepforkMarker) -> Any:
    if marker.mode == "forbidden":
        options = {name: marker.options[name] for name in _FORBIDDEN_OPTIONS if name in marker.options}
        return ForbiddingHandler(**options)
    assert marker.path is not None
    mode = record_mode(item.config)
    if mode == "rewrite" or (mode == "once" and not os.path.lexists(marker.path)):
        marker.path.parent.mkdir(parents=True, exist_ok=True)
        return RecordingSession(marker.agent, output=marker.path, overwrite=mode == "rewrite")
    if not marker.path.exists():
        raise StepforkBundleMissingError(marker.path)
    try:
        return ReplaySession.from_trace(marker.path, marker.mode, **marker.options)
    except TraceIntegrityError as exc:
        refused = str(exc)
    # one line, as every command says it: failing outside the except block, or pytest shows the line
    # twice ("During handling of the above exception, another exception occurred")
    pytest.fail(refused, pytrace=False)


def _marker_path(item: pytest.Item) -> str | None:
    """The normalized absolute bundle path the item's marker names, or None (no marker, or no path)."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    raw = marker.args[0] if marker.args else marker.kwargs.get("path")
    if raw is None:
        return None
    path = Path(raw)
    if not path.is_absolute():
        path = Path(item.path).parent / path
    return os.path.normpath(path)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Remember the bundle each collected marked test names (for ``--stepfork-unused``)."""
    path = _marker_path(item)
    if path is not None:
        item.config.stash[_USED].add(path)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands the bundles its tests named to the controller (``workeroutput``)."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        used: set[str] = session.config.stash.get(_USED, set())
        workeroutput["stepfork_used"] = sorted(used)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The xdist controller gathers what each worker collected (it collects nothing itself)."""
    used = getattr(node, "workeroutput", {}).get("stepfork_used", ())
    node.config.stash.setdefault(_USED, set()).update(used)


def unused_bundles(config: pytest.Config) -> list[Path]:
    """The ``.sftrace`` directories under the test tree (the directories pytest was asked to collect, or
    those of the files it was given) that no collected marked test names, sorted."""
    used = config.stash.get(_USED, set())
    roots: set[Path] = set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        roots.add(path if path.is_dir() else path.parent)
    found: set[Path] = set()
    for root in roots:
        for bundle in root.rglob("*.sftrace"):
            if bundle.is_dir() and os.path.normpath(bundle) not in used:
                found.add(bundle)
    return sorted(found)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """With ``--stepfork-unused``, list the unused bundles (the run's outcome is not changed)."""
    if not config.getoption(UNUSED_OPTION):
        return
    unused = unused_bundles(config)
    terminalreporter.section("stepfork: unused bundles")
    if not unused:
        terminalreporter.line("none: every bundle under the test tree is named by a collected test")
    for bundle in unused:
        try:
            shown: Path = bundle.relative_to(config.invocation_params.dir)
        except ValueError:
            shown = bundle
        terminalreporter.line(str(shown))


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
    with session:
        result = yield
    # only reached when the body passed: its own failure stays the report (a forbidden test's: the seal's
    # refusal, when the body caught it)
    session.verify_complete()
    return result


def session_of(item: pytest.Item) -> Any:
    """The Stepfork session this plugin built for ``item`` (as the ``stepfork`` fixture gives it), or None;
    for other plugins (``--stepfork-html``) that report on a marked test after it ran."""
    return item.stash.get(_SESSION, None)


@pytest.fixture
def stepfork(request: pytest.FixtureRequest) -> Any:
    """The Stepfork session of this test: a ReplaySession, a RecordingSession (when it records), the
    ForbiddingHandler (``mode="forbidden"``), or None when the test has no ``stepfork`` marker."""
    return request.node.stash.get(_SESSION, None)
