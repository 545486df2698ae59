"""ReplaySession: run a trusted entrypoint again with its dependency calls served from a bundle.

Spec replay.txt ("Python API", "Modes", "Matching guarantees", "Errors") and hybrid-replay.txt; the
order of the checks is interop/REFERENCE-NOTES.md section 6 ("Matching"). The session is a
:class:`~stepfork.trace.boundary.BoundaryHandler`: ``with``/``async with`` makes it the active handler in
the context variable, so instrumented tools and ``llm_request`` calls in nested and async code reach it.

Each call, before its body could run:

1. orphan (a thread started without the context, while this is the only session in the process): served
   like any call, through the same checks, with an :class:`OrphanCallWarning` once per session, as the
   recorder does, so a run recorded from a thread pool replays (docs/decisions.md);
2. mode ``forbidden`` -> ReplayPolicyError; ``manual`` -> ``approve(call)`` must say True;
3. session not active -> ReplayError ``not_active``;
4. identity (kind, tool name, LLM model and provider) against the cursor's choice: the next recorded
   call (ordering ``strict``), or the member of the current concurrent group that matches (``concurrent``);
5. stored input fingerprint valid; redacted canonical input equal (skipped for a hybrid live LLM);
6. recorded or call-site policy ``forbidden``/``manual`` (outside manual mode) -> ReplayPolicyError;
7. the recorded call has an outcome and a valid output fingerprint (skipped for a hybrid live LLM);
8. live mode: a tool outside ``allow_live_tools`` -> ReplayPolicyError (nothing consumed);
9. consume; then run the body (live LLM, allowed tool, hybrid live LLM), raise
   :class:`RecordedDependencyError` (recorded failure; with ``raise_as``, the user's own class for its
   type), or return the recorded output rebuilt into the tool's return annotation (type-faithful replay,
   C4). That last part is :mod:`stepfork.replay.serving`; checks 2, 6 and 8 are in
   :mod:`stepfork.replay.modes`, 4, 5 and 7 in :mod:`stepfork.replay.matching`.

``http`` calls (issue 29: requests outside the agent's order, :mod:`stepfork.trace.http_calls`) skip
the cursor: checks 2 and 3, then the request is served from :class:`~stepfork.replay.requests.RequestPool`
by its method, URL and body, in any order; one the recording does not hold is refused
(``request_not_recorded``), except in live and hybrid modes, where it is sent.

The first ReplayError other than RecordedDependencyError is kept as :attr:`ReplaySession.divergence`, even
when the agent catches it; :meth:`verify_complete` and every assertion fail afterwards.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import Token
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, TypeVar

from stepfork.replay.errors import RecordedDependencyError, ReplayError, ReplayMismatchError
from stepfork.replay.ignoring import IgnoredDifference, check_ignore_labels, normalize_ignore
from stepfork.replay.imported import (
    IMPORT_EXTENSION,
    ImportedCalls,
    content_not_captured,
    project_input,
    served_output,
)
from stepfork.replay.matching import (
    LiveInput,
    check_identity,
    check_input,
    check_outcome,
    incomplete_error,
)
from stepfork.replay.modes import Approver, check_call_policy, check_live_tool, check_mode, validate_options
from stepfork.replay.network import Seal, format_host, network_for, parse_allowed_command, parse_allowed_host
from stepfork.replay.network import seal as seal_network
from stepfork.replay.network import unseal as unseal_network
from stepfork.replay.network_notes import SealNotes, end_of_run
from stepfork.replay.noise.origins import Origins
from stepfork.replay.ordering import DEFAULT_ORDERING, make_cursor, normalize_ordering
from stepfork.replay.plan import RecordedCall, extract_all_calls, extract_recorded_calls
from stepfork.replay.raise_as import RaiseAs, RaiseAsTarget, recorded_error_types
from stepfork.replay.requests import (
    RequestPool,
    ServedRequest,
    agent_requests,
    in_order,
    not_made,
    split_requests,
)
from stepfork.replay.results import ExecutedCall, MatchedCall, ReplayDecision, ReplaySummary, ServedCalls
from stepfork.replay.serving import rebuild_output, recorded_failure
from stepfork.trace import boundary, executors, minting
from stepfork.trace._files import cyclic_gc_paused  # shared with Trace.load (bulk object creation)
from stepfork.trace._urls import url_of
from stepfork.trace.boundary import BoundaryCall, BoundaryHandler
from stepfork.trace.bundle import Trace, load_verified_trace, read_extension
from stepfork.trace.concurrency import facts_of
from stepfork.trace.errors import TraceError
from stepfork.trace.executors import SubmittedWork
from stepfork.trace.http_calls import is_http_call
from stepfork.trace.minting import MintLog
from stepfork.trace.recording import OrphanCallWarning

T = TypeVar("T")

SUBMITTED_WORK_WAIT = 5.0
"""Seconds a replay ending with recorded calls still expected waits for the thread-pool work the agent
submitted under it (stepfork.trace.executors) to finish before leaving."""


def load_source(source: Trace | str | os.PathLike[str]) -> Trace:
    """A ``Trace`` as is, or the bundle at a path, loaded by ``load_verified_trace``: a bundle that does
    not match its integrity.json is refused (TraceIntegrityError), any other unreadable one raises
    TraceStorageError. A bundle URL is read with the network seal suspended
    (:func:`stepfork.replay.network.suspended`): a ``stepfork check`` worker is sealed for life."""
    if isinstance(source, Trace):
        return source
    if url_of(source) is not None:  # Stepfork's own read, from a process that may be sealed for life
        from stepfork.replay.network import suspended

        with suspended():
            return load_verified_trace(source)
    return load_verified_trace(source)


@dataclasses.dataclass(frozen=True, slots=True)
class _Held:
    """What ``_decide`` returns for a call the recorded run ended before: its failure, raised once the
    session's run has ended (``ReplaySession._ended``)."""

    failure: BaseException


class ReplaySession(SealNotes):
    """Replay of one recorded run (spec replay.txt).

    Args:
        trace: the recorded run (``Trace``); see :meth:`from_trace` for paths.
        mode: ``frozen`` (default), ``hybrid``, ``live``, ``forbidden`` or ``manual`` (a ``ReplayPolicy``
            member works too); ``derived`` is reserved and rejected.
        live_llms: hybrid only: labels of the LLM calls to run again (``provider/model``, or the model when
            no provider was recorded); each must exist in the trace.
        allow_live_tools: live only: tool names whose bodies may run (every occurrence); each must exist.
        approve: manual only: ``approve(call) -> bool`` for each call (``call.input`` redacted). Approved
            calls are matched and served as in frozen mode.
        ordering: ``"auto"`` (default): recorded order, except among sibling calls the recording proves
            concurrent (interleaved lines, overlapping times, or thread-pool/``asyncio.gather`` members per
            the bundle's ``concurrency.json``), which match by identity in any order (issue 12);
            ``"strict"``: one cursor, recorded order; ``"concurrent"``: concurrent sibling
            calls (an ``asyncio.gather``) match by identity in any order; ``"unordered"``: so do all
            consecutive sibling calls, overlapping or not (free-running threads). See
            :mod:`stepfork.replay.ordering`, issue 6 "Concurrency".
        ignore: ``{call label: [JSON paths]}``: input differences at these paths match, and are reported
            in :attr:`ignored_differences` (a clock or random id the agent puts in a tool input; issue 12,
            stepfork.replay.ignoring). A label naming no recorded call, or a malformed path, is a
            ValueError.
        raise_as: ``{recorded error type: exception class or factory}``: raise a recorded failure of that
            type as the user's own class, so the agent's ``except RateLimited:`` runs; a class gives an
            instance of both it and RecordedDependencyError. Keys are qualified or short type names; rules
            and fallbacks in :mod:`stepfork.replay.raise_as`. Nothing named by the bundle is imported.
        network: ``"sealed"`` or ``"open"``; None (default): sealed in ``frozen``, ``forbidden`` and
            ``manual``, open in ``live`` and ``hybrid``. While a sealed session is active an outbound
            connection to any address, loopback included, raises ReplayPolicyError ``network_sealed``
            before a byte is sent, recorded as the divergence (:mod:`stepfork.replay.network`; issue 29).
        allow_hosts: what stays reachable while sealed: ``HOST`` (every port of a name or an address) or
            ``HOST:PORT``, IPv6 addresses in brackets (``[::1]:8000``), a Unix socket's path
            (``/var/run/docker.sock``); kept normalized in :attr:`allow_hosts`
            (:func:`stepfork.replay.network.parse_allowed_host`).
        allow_commands: the programs a sealed replay lets start unsealed, by name (``curl``) or path
            (``/usr/bin/curl``); any other child process the seal cannot reach (not Python, or a Python
            started with ``-I``) raises ChildProcessRefusedError ``child_process_refused``, recorded as the
            divergence (:mod:`stepfork.replay.network_children`). Kept in :attr:`allow_commands`; one that
            runs is named in :attr:`seal_gaps`.

    Raises:
        ValueError: an unknown or reserved mode, an unknown ordering, a malformed ``allow_hosts`` or
            ``allow_commands`` entry, or
            an invalid combination (see
            :func:`stepfork.replay.modes.validate_options`), or an invalid ``raise_as`` (see
            :class:`stepfork.replay.raise_as.RaiseAs`), naming the problem.

    Attributes:
        trace, mode, hybrid, live_llms, allow_live_tools, approve, ordering, raise_as (read-only mapping);
        ``calls``: the visible recorded calls; ``submit_carries_context``: work submitted to a thread pool
        under the session runs in it, as it did when the bundle was recorded (its ``concurrency.json``
        says so; :mod:`stepfork.trace.executors`), else it is a thread without the session, as before.
    """

    is_replay = True

    def __init__(
        self,
        trace: Trace,
        mode: Any = "frozen",
        *,
        live_llms: Iterable[str] | None = None,
        allow_live_tools: Iterable[str] | None = None,
        approve: Approver | None = None,
        ordering: str = DEFAULT_ORDERING,
        raise_as: Mapping[str, RaiseAsTarget] | None = None,
        network: str | None = None,
        allow_hosts: Iterable[str] | None = None,
        ignore: Mapping[str, Iterable[str]] | None = None,
        allow_commands: Iterable[str] | None = None,
    ) -> None:
        SealNotes.__init__(self)
        self.ordering = normalize_ordering(ordering)
        events = list(trace.events)
        with cyclic_gc_paused():  # one object per call, all long-lived: keep setup linear (see _files)
            all_calls = extract_all_calls(events)
        options = validate_options(
            all_calls,
            mode,
            live_llms=live_llms,
            allow_live_tools=allow_live_tools,
            approve=approve,
        )
        self.trace = trace
        self.mode: str = options.mode
        self.hybrid = options.mode == "hybrid"
        self.network = network_for(options.mode, network)
        # normalized (``HOST``/``HOST:PORT``, IPv6 in brackets); a malformed entry is a ValueError here
        allowed = (format_host(*parse_allowed_host(host)) for host in allow_hosts or ())
        self.allow_hosts = tuple(dict.fromkeys(allowed))
        self.allow_commands = tuple(dict.fromkeys(parse_allowed_command(c) for c in allow_commands or ()))
        self._seal: Seal | None = None
        self.live_llms = options.live_llms
        self.allow_live_tools = options.allow_live_tools
        self.approve = options.approve
        with cyclic_gc_paused():
            visible = extract_recorded_calls(
                events, mode=options.mode, live_llms=options.live_llms, all_calls=all_calls
            )
        # requests outside the agent's order are served by their request, never by the cursor (issue 29)
        self.calls: list[RecordedCall] = visible
        requests: list[RecordedCall] = []
        expected: frozenset[str] = frozenset()
        if any(call.kind == "tool" and is_http_call(call.name) for call in all_calls):
            self.calls, shown = split_requests(visible)
            requests = split_requests(all_calls)[1]
            expected = agent_requests(shown, facts_of(trace))  # must come before the end
        self._requests = RequestPool(requests, self.calls, expected)
        recorded_types = recorded_error_types(self.calls)
        self._raise_as = RaiseAs(raise_as, recorded_types) if raise_as is not None else None
        self.raise_as: Mapping[str, RaiseAsTarget] = MappingProxyType(dict(raise_as or {}))
        facts = facts_of(trace)
        self._cursor = make_cursor(self.calls, self.ordering, facts)
        # the recorder's rule for thread pools, so that replay decides who made a call as it did
        self.submit_carries_context = facts is not None and facts.submit_carries_context
        self._submitted = SubmittedWork()
        self._lock = threading.RLock()
        self._served = ServedCalls()  # records built on read (see ServedCalls)
        self._ignore = normalize_ignore(ignore)
        check_ignore_labels(ignore, (call.label for call in all_calls))  # a typo would ignore nothing
        self.ignored_differences: list[IgnoredDifference] = []
        """Input differences accepted at ``ignore`` paths, in the order they were met (issue 12)."""
        self._divergence: ReplayError | None = None
        self._divergence_count = 0
        self._orphan_warned = False
        self.bundle_path: Path | None = None  # set by from_trace(path); see metadata()
        # calls imported from OpenTelemetry spans (otel-import.json, set by from_trace): partial inputs
        # and content never captured (stepfork.replay.imported)
        self.imported: ImportedCalls | None = None
        self._token: Token[BoundaryHandler | None] | None = None
        self._entered = False
        self._active = False
        self.minted: MintLog | None = None
        """The values minted in this process while the session was active (``stepfork.trace.minting``):
        the replay's side of the renaming of fresh values (:meth:`live_origins`)."""
        self._inputs: Any = None  # RenamedInputs (stepfork.replay.noise.inputs), made on need
        self._random_before: minting.RandomState | None = None  # `random`'s state before _enter
        self._started: int | None = None  # time.time_ns() at _enter
        self._ended = threading.Event()  # set when the run ends: releases the calls held (_Held)

    @classmethod
    def from_trace(
        cls,
        source: Trace | str | os.PathLike[str],
        mode: Any = "frozen",
        *,
        live_llms: Iterable[str] | None = None,
        allow_live_tools: Iterable[str] | None = None,
        approve: Approver | None = None,
        ordering: str = DEFAULT_ORDERING,
        raise_as: Mapping[str, RaiseAsTarget] | None = None,
        network: str | None = None,
        allow_hosts: Iterable[str] | None = None,
        ignore: Mapping[str, Iterable[str]] | None = None,
        allow_commands: Iterable[str] | None = None,
    ) -> ReplaySession:
        """Build a session from a bundle path or an in-memory ``Trace``.

        Raises:
            TraceIntegrityError: the bundle does not match its integrity.json (a TraceStorageError).
            TraceStorageError: the bundle cannot be read (missing file, invalid JSON or event...).
            ValueError: as the constructor.
        """
        session = cls(
            load_source(source),
            mode,
            live_llms=live_llms,
            allow_live_tools=allow_live_tools,
            approve=approve,
            ordering=ordering,
            raise_as=raise_as,
            network=network,
            allow_hosts=allow_hosts,
            ignore=ignore,
            allow_commands=allow_commands,
        )
        if not isinstance(source, Trace):
            session.attach_bundle(source)
        return session

    def attach_bundle(self, path: str | os.PathLike[str]) -> None:
        """Note the bundle directory the session's trace was loaded from: :meth:`metadata` reads its
        extension files, and an ``otel-import.json`` (a bundle made by ``stepfork import``) tells which
        calls hold part of their request or no content (stepfork.replay.imported)."""
        self.bundle_path = Path(path)
        data = self.metadata(IMPORT_EXTENSION)
        if data is not None:
            self.imported = ImportedCalls(data)

    def metadata(self, name: str) -> Any:
        """The bundle's extension file ``<name>.json`` (``sdk-versions``, ``fork``) as JSON, or None.

        None as well for a session built from an in-memory ``Trace`` or when the file is absent or
        unreadable: extension files inform diagnostics (an SDK that cannot rebuild a recorded object names
        the version recorded), they never decide a replay.
        """
        if self.bundle_path is None:
            return None
        try:
            return read_extension(self.bundle_path, name)
        except (TraceError, ValueError):
            return None

    def live_origins(self) -> Origins:
        """Where the replay's values came from: the recording's handed-out ids, the values this process
        minted while the session was active and the replay's own clock window, from its start to now
        (:class:`stepfork.replay.noise.Origins`)."""
        from stepfork.replay.noise.clock import ClockWindow

        return Origins(
            self.trace,
            minted=self.minted if self.minted is not None else MintLog(),
            clock=ClockWindow(self._started if self._started is not None else time.time_ns()),
        )

    def _renamed_inputs(
        self, expected: RecordedCall, value: Any, ignored: set[str]
    ) -> list[tuple[str, Any, Any, str]] | None:
        """:class:`stepfork.replay.noise.inputs.RenamedInputs` of this session (made on first need)."""
        return self._input_renaming()(expected.kind, expected.input, value, ignored)  # type: ignore[no-any-return]

    def _renames_to(self, live: LiveInput, expected: RecordedCall) -> bool:
        """True when ``live``'s input equals ``expected``'s up to the renaming of fresh values, as a trial
        that binds nothing (a concurrent group's member chosen by it: ``ConcurrentCursor.select``)."""
        if expected.input is None:
            return False
        return self._input_renaming().accepts(expected.kind, expected.input, live.value)  # type: ignore[no-any-return]

    def _input_renaming(self) -> Any:
        if self._inputs is None:
            from stepfork.replay.noise.inputs import RenamedInputs

            self._inputs = RenamedInputs(Origins(self.trace), self.live_origins())
        return self._inputs

    def output_scope(self) -> Any:
        """The :class:`stepfork.replay.noise.Comparison` the replay's output is compared in: the one its
        input matching renamed fresh values in, so a fresh value the agent sent as ``x`` (live ``x'``) must
        come back as ``x'`` in the output, and two values never swap (docs/replay.md "Fresh values";
        NEWCOMER5 F2)."""
        return self._input_renaming().scope

    # -- context management ----------------------------------------------------------------------------

    def _enter(self) -> None:
        if self._entered:
            raise ReplayError("a ReplaySession cannot be entered twice (re-entered)", code="reentered")
        self._entered = True
        self._active = True
        recorded = minting.minted_of(self.trace)  # `random` starts where the recorded run's did
        self._random_before = minting.restore_random(recorded.random_state if recorded is not None else None)
        self.minted = minting.start()
        if self.submit_carries_context:
            executors.install()
        self._started = time.time_ns()  # the replay's clock window opens (live_origins)
        self._token = boundary.activate(self)
        if self.network == "sealed":
            self._seal = seal_network(self, self.allow_hosts, self.allow_commands)
        from stepfork.trace._after_import import capture_framework_tools, capture_mcp_sessions

        capture_framework_tools()  # a framework tool without @trace_tool: served or refused by name
        if self.mode != "live":  # an MCP session the agent did not instrument: served or refused by name
            capture_mcp_sessions()

    def open_network(self) -> None:
        """Lift this session's network seal from now on (``fork`` from its fork point, where the run goes
        live), for the threads it started too; nothing happens when it is not sealed. Idempotent."""
        if self._seal is not None:
            unseal_network(self._seal, keep_threads=False)
            self._seal = None

    def note_submitted(self, future: Any) -> None:
        """Note work submitted to a thread pool under this session (``future``; stepfork.trace.executors):
        when the run ends still expecting recorded calls, the session waits for it (:meth:`_exit`)."""
        self._submitted.add(future)

    def _expects_more(self) -> bool:
        with self._lock:
            return bool(self._cursor.required_remaining()) or bool(self._requests.unmade())

    def _exit(self, exc_type: type[BaseException] | None = None) -> None:
        if self._submitted and self._expects_more():
            # work the agent submitted and did not wait for may still make them: give it the time to,
            # while the session serves, rather than call them missing
            self._submitted.wait(SUBMITTED_WORK_WAIT)
        self._ended.set()  # the calls the recorded run ended before get their outcome now (_Held)
        # the run's threads end under the session, as a program's before it exits (network_threads)
        end_of_run(self, self._seal, exc_type)
        self._active = False
        if self.minted is not None:
            minting.stop(self.minted)
        minting.put_back_random(self._random_before)  # the process's generator as the replay found it
        self._random_before = None
        if self._seal is not None:
            unseal_network(self._seal)
            self._seal = None
        if self._token is not None:
            boundary.deactivate(self, self._token)
            self._token = None

    def __enter__(self) -> ReplaySession:
        self._enter()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._exit(exc_type)  # never suppresses; exiting does not call verify_complete()

    async def __aenter__(self) -> ReplaySession:
        self._enter()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._exit(exc_type)

    # -- results ---------------------------------------------------------------------------------------

    @property
    def matched(self) -> list[MatchedCall]:
        """The consumed calls, in order (a copy)."""
        with self._lock:
            return list(self._served.matched())

    @property
    def consumed(self) -> int:
        """Number of recorded calls consumed so far: ``len(matched)`` without building the records."""
        return len(self._served)

    @property
    def last_consumed_index(self) -> int | None:
        """The recorded index of the last consumed call (``matched[-1].index``), or None before the first."""
        with self._lock:
            return self._served.last_index()

    @property
    def executed_calls(self) -> tuple[ExecutedCall, ...]:
        """The calls reached and consumed, in order, with redacted inputs (failed calls included)."""
        with self._lock:
            return tuple(self._served.executed())

    @property
    def pending(self) -> int:
        """Number of visible recorded calls not consumed yet."""
        return self._cursor.pending

    @property
    def divergence(self) -> ReplayError | None:
        """The first ReplayError raised other than RecordedDependencyError, even if the agent caught it."""
        return self._divergence

    @property
    def divergence_count(self) -> int:
        """How many ReplayErrors other than RecordedDependencyError were raised so far, caught or not (0: a
        clean replay). The strict cursor does not advance on one, so each call the recording lacks is one."""
        return self._divergence_count

    @property
    def served_requests(self) -> tuple[ServedRequest, ...]:
        """The ``http`` calls (requests outside the agent's order) answered so far, in the order they came."""
        with self._lock:
            return tuple(self._requests.served)

    @property
    def recorded_requests(self) -> int:
        """How many ``http`` calls the recording holds (served or not)."""
        return len(self._requests.calls)

    @property
    def summary(self) -> ReplaySummary:
        """:class:`ReplaySummary` of the session as it stands."""
        with self._lock:
            matched = tuple(self._served.matched())
        return ReplaySummary(self.mode, matched, self._cursor.remaining_labels())

    def verify_complete(self) -> None:
        """Check that the replay consumed every visible recorded call and never diverged.

        Raises:
            ReplayMismatchError: ``diverged_earlier`` when a divergence was raised (even if caught); the
                original is its ``__cause__`` and its diagnostic is carried.
            ReplayExhaustedError: ``incomplete`` when recorded calls were left unmatched; ``remaining``
                lists their labels (the message shows up to 5). A subclass of ReplayMismatchError.
            ReplayMismatchError: ``request_not_made`` when an ``http`` call the agent's own context made in
                the recording never came (``recorded http call not made: POST https://...``);
                requests of background threads never count.
        """
        if self._divergence is not None:
            raise ReplayMismatchError(
                f"replay diverged earlier: {self._divergence.summary}",
                code="diverged_earlier",
                diagnostic=self._divergence.diagnostic,
            ) from self._divergence
        remaining = self._cursor.required_remaining()
        if remaining:
            raise incomplete_error(tuple(call.label for call in remaining), remaining[0])
        with self._lock:
            unmade = self._requests.unmade()
        if unmade:
            raise not_made(unmade)

    # -- the boundary handler --------------------------------------------------------------------------

    def _diverge(self, error: ReplayError) -> ReplayError:
        with self._lock:
            self._divergence_count += 1
            if self._divergence is None:
                self._divergence = error
        return error

    def _compares(self, expected: RecordedCall) -> bool:
        """False for a hybrid live LLM, whose input may change (hybrid-replay.txt); True otherwise."""
        return not (self.hybrid and expected.kind == "llm" and expected.label in self.live_llms)

    def _decide(self, call: BoundaryCall, orphan: bool) -> tuple[bool, Any]:
        """Run checks 1-9 of the module docstring; return ``(execute, value)``."""
        try:
            return self._decide_checked(call, orphan)
        except RecordedDependencyError:
            raise
        except ReplayError as error:
            if error.code == "not_active" and self._entered:
                # the session has ended: a call still arriving (a background thread's, racing the end of
                # the run) is refused, but it is no part of the run the verdict judges
                raise
            self._diverge(error)
            raise

    def _decide_checked(self, call: BoundaryCall, orphan: bool) -> tuple[bool, Any]:
        if call.kind == "tool" and is_http_call(call.name):
            return self._serve_request(call, orphan)
        if orphan and not self._orphan_warned:
            # The strict (or concurrent) cursor still checks the call's identity and input, so a call
            # that does not belong to this run diverges before its body runs.
            self._orphan_warned = True
            warnings.warn(
                f"{call.kind} call {call.label!r} arrived from a thread without the replay's context; "
                "it is served by the only active replay session. Start threads with "
                "contextvars.copy_context().run(...) so calls reach their session explicitly",
                OrphanCallWarning,
                stacklevel=boundary.caller_stacklevel(),
            )
        live = LiveInput(call.input)
        mode = self.mode
        check_mode(mode, self.approve, call, live)
        if not self._active:
            raise ReplayError("the ReplaySession is not active (use it with `with`)", code="not_active")
        with self._lock:
            cursor = self._cursor
            try:
                renames = functools.partial(self._renames_to, live)
                expected = check_identity(cursor.select(call, live, self._compares, renames), call, live)
            except ReplayMismatchError as error:
                raise self._unrecorded_tool(error, call) from None
            # not self._compares(expected), inlined: this runs once per replayed call
            live_llm = self.hybrid and expected.kind == "llm" and expected.label in self.live_llms
            served_live, match, served = live, "full", expected
            if self.imported is not None and (info := self.imported.get(expected.call_event_id)) is not None:
                if not info.content_captured and not live_llm:
                    raise content_not_captured(
                        expected.kind, expected.label, expected.index, self.imported.convention
                    )
                if info.partial:
                    live, match = LiveInput(project_input(call.input, info)), "partial"
                    if expected.kind == "llm" and expected.output is not None:
                        # a trace that did not record `stream`: a streaming live request reads a stream
                        output = served_output(info, expected.output, call.input)
                        if output is not expected.output:
                            served = dataclasses.replace(expected, output=output)
            ignored_paths = self._ignore.get(expected.label, ())
            ignored = check_input(
                cursor,
                expected,
                call,
                live,
                compare=not live_llm,
                ignore=ignored_paths,
                renamed=self._renamed_inputs,
            )
            for path, before, after, reason in ignored:
                self.ignored_differences.append(
                    IgnoredDifference(
                        expected.index, expected.step, expected.label, path, before, after, reason
                    )
                )
            check_call_policy(mode, expected, call, live)
            plain = False if live_llm else check_outcome(cursor, expected, call, live)
            execute = live_llm or (mode == "live" and expected.kind == "llm")
            if mode == "live" and expected.kind == "tool":
                check_live_tool(self.allow_live_tools, expected, call, live)
                execute = True
            cursor.consume(expected)
            action = "executed" if execute else "substituted"
            # compared in full and equal (nothing ignored): the redacted live input is the recorded one
            same_input = not live_llm and not ignored
            self._served.add(expected, served_live, action, match, same_input=same_input)
        if execute:
            return True, None
        if expected.status == "error":  # EventStatus.ERROR.value
            return False, self._failure(expected, call, live)
        # what check_outcome proved is of expected.output, so only when that is the output served
        # (an output that no longer fits the annotation raises: a mismatch, which diverges in _decide)
        return False, rebuild_output(served, call, live, plain and served is expected)

    def _failure(self, expected: RecordedCall, call: BoundaryCall, live: LiveInput) -> _Held:
        """The recorded failure of ``expected``, raised by ``_decide`` at once, or, for a call the recorded
        run ended before (``expected.unfinished``), returned held: the caller waits until the run ends
        and then gets it, as while recorded it got nothing before the end (docs/recording.md, "Calls
        still running when the run ends")."""
        failure = recorded_failure(expected, call, live, self._raise_as)
        if not expected.unfinished:
            raise failure
        return _Held(failure)

    def _unrecorded_tool(self, error: ReplayMismatchError, call: BoundaryCall) -> ReplayMismatchError:
        """``error`` (a call the recording does not have where it came), with the hint for a tool no
        recorded call names: most often a framework tool of a bundle recorded before framework tools were
        instrumented boundaries (docs/decisions.md, "Framework tools"), refused instead of run."""
        if call.kind != "tool" or error.diagnostic is None or any(c.name == call.name for c in self.calls):
            return error
        error.diagnostic = dataclasses.replace(error.diagnostic, hint=unrecorded_tool_hint(call.name))
        return error

    def _serve_request(self, call: BoundaryCall, orphan: bool) -> tuple[bool, Any]:
        """Checks 2 and 3, then serve an ``http`` call from the pool (module docstring); a telemetry export
        is acknowledged without being matched or sent, unless the run goes live (live and hybrid modes)."""
        sends = self.mode in ("live", "hybrid")
        if not sends and self._active:
            with self._lock:
                acknowledged = self._requests.acknowledge(call, orphan)
            if acknowledged is not None:
                return False, acknowledged
        live = LiveInput(call.input)
        check_mode(self.mode, self.approve, call, live)
        if not self._active:
            raise ReplayError("the ReplaySession is not active (use it with `with`)", code="not_active")
        with self._lock:
            expected, plain = self._requests.serve(call, live, orphan, sends=sends)
        if expected is None:
            return True, None  # live or hybrid: the run goes live, so does a request it did not make
        if expected.status == "error":  # a transport error: the HTTP capture raises the library's class
            return False, self._failure(expected, call, live)
        return False, rebuild_output(expected, call, live, plain)

    def note_telemetry_refused(self, where: str) -> None:
        """Note that the seal refused a connection to a telemetry collector (``host:port``): counted with
        the requests (``served_requests``, action ``refused``), never a divergence (issue 30)."""
        with self._lock:
            self._requests.refused(where)

    def route_request(self, call: BoundaryCall, as_llm: Callable[[], BoundaryCall]) -> BoundaryCall:
        """The call the HTTP capture replays a request as: ``call`` (an ``http`` call), or ``as_llm()`` when
        the recording does not hold the request as an ``http`` call but holds it as the LLM call next in the
        agent's order, exactly (a recording made before issue 29 held every captured request so:
        :func:`stepfork.replay.requests.in_order`)."""
        with self._lock:
            return in_order(call, as_llm, self._requests, self._cursor, self._compares)

    def handle(self, call: BoundaryCall, body: Callable[[], T], *, orphan: bool = False) -> T:
        """Serve or run a synchronous call (BoundaryHandler protocol); see the module docstring.

        Returns the recorded output (rebuilt into ``call.return_type``) or the body's result.

        Raises:
            ReplayMismatchError, ReplayExhaustedError, ReplayPolicyError, ReplayError: before the body runs.
            RecordedDependencyError: the call failed during recording (with ``raise_as``, possibly the
                user's own exception class instead; see the class docstring).
        """
        execute, value = self._decide(call, orphan)
        if execute:
            return body()
        if type(value) is _Held:
            self._ended.wait()
            raise value.failure
        return value  # type: ignore[no-any-return]

    async def ahandle(
        self, call: BoundaryCall, body: Callable[[], Awaitable[T]], *, orphan: bool = False
    ) -> T:
        """Asynchronous :meth:`handle`: awaits ``body()`` when the call executes."""
        execute, value = self._decide(call, orphan)
        if execute:
            return await body()
        if type(value) is _Held:
            import asyncio

            await asyncio.get_running_loop().run_in_executor(None, self._ended.wait)
            raise value.failure
        return value  # type: ignore[no-any-return]

    # -- the reference's explicit API ------------------------------------------------------------------

    def _decision(self, call: BoundaryCall) -> ReplayDecision:
        execute, value = self._decide(call, False)
        if type(value) is _Held:
            self._ended.wait()
            raise value.failure
        with self._lock:
            return ReplayDecision(execute, value, self._served.matched()[-1])

    def before_tool(self, *, name: str, input: Any) -> ReplayDecision:
        """Match a tool call given by name and JSON input; return what to do (REFERENCE-API.md)."""
        return self._decision(BoundaryCall(kind="tool", name=name, input=input))

    def before_llm(self, *, provider: str | None, model: str, input: Any) -> ReplayDecision:
        """Match an LLM call given by provider, model and JSON input; return what to do."""
        return self._decision(
            BoundaryCall(kind="llm", name=model, input=input, provider=provider, model=model)
        )


def unrecorded_tool_hint(name: str) -> str:
    """The hint of a tool call no recorded call names (:meth:`ReplaySession._unrecorded_tool`)."""
    return (
        f"the recording holds no call of tool {name!r}, so it is refused, not run. A bundle recorded before "
        "Stepfork recorded framework tools (0.2.0 and earlier) holds no call of an OpenAI Agents SDK, "
        "LangChain, smolagents, LlamaIndex or CrewAI tool without @trace_tool: record the run again"
    )


def active_replay() -> ReplaySession | None:
    """The ReplaySession active in the current context, or None."""
    handler = boundary.active_handler()
    return handler if isinstance(handler, ReplaySession) else None
