"""ReplaySession: run a trusted entrypoint again with its dependency calls served from a bundle.

Spec replay.txt ("Python API", "Modes", "Matching guarantees", "Errors") and hybrid-replay.txt. The session is
a :class:`~stepfork.trace.boundary.BoundaryHandler`: ``with``/``async with`` makes it the active handler in
the context variable, so instrumented tools and ``llm_request`` calls in nested and async code reach it.

This module holds the session's construction (its options checked, the recorded calls read) and its life
(entering and leaving: the network seal, minting, thread pools); its other parts are mixins, one module
each, which :class:`ReplaySession` inherits:

- :mod:`stepfork.replay.session_calls`: how each call is served, checks 1-9 in their order
  (interop/REFERENCE-NOTES.md section 6, "Matching"), ``http`` calls from the request pool, ``handle`` and
  ``ahandle`` (``CallReplayer``, the boundary-handler half);
- :mod:`stepfork.replay.session_results`: the properties and ``verify_complete`` (``SessionResults``);
- :mod:`stepfork.replay.session_renaming`: the fresh values, ``live_origins`` and ``output_scope``
  (``FreshValueRenaming``);
- :mod:`stepfork.replay.session_explicit`: ``before_tool``/``before_llm`` (``ExplicitReplay``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping
from contextvars import Token
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

from stepfork.replay.errors import ReplayError
from stepfork.replay.ignoring import IgnoredDifference, check_ignore_labels, normalize_ignore
from stepfork.replay.imported import IMPORT_EXTENSION, ImportedCalls
from stepfork.replay.modes import Approver, validate_options
from stepfork.replay.network import Seal, format_host, network_for, parse_allowed_command, parse_allowed_host
from stepfork.replay.network import seal as seal_network
from stepfork.replay.network import unseal as unseal_network
from stepfork.replay.network_notes import SealNotes, end_of_run
from stepfork.replay.ordering import DEFAULT_ORDERING, make_cursor, normalize_ordering
from stepfork.replay.plan import RecordedCall, extract_all_calls, extract_recorded_calls
from stepfork.replay.raise_as import RaiseAs, RaiseAsTarget, recorded_error_types
from stepfork.replay.requests import RequestPool, agent_requests, split_requests
from stepfork.replay.results import ServedCalls
from stepfork.replay.session_calls import unrecorded_tool_hint
from stepfork.replay.session_explicit import ExplicitReplay
from stepfork.trace import boundary, executors, minting
from stepfork.trace._files import cyclic_gc_paused  # shared with Trace.load (bulk object creation)
from stepfork.trace._urls import url_of
from stepfork.trace.boundary import BoundaryHandler
from stepfork.trace.bundle import Trace, load_verified_trace, read_extension
from stepfork.trace.concurrency import facts_of
from stepfork.trace.errors import TraceError
from stepfork.trace.executors import SubmittedWork
from stepfork.trace.http_calls import is_http_call
from stepfork.trace.minting import MintLog

__all__ = ["SUBMITTED_WORK_WAIT", "ReplaySession", "active_replay", "load_source", "unrecorded_tool_hint"]

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


class ReplaySession(ExplicitReplay, SealNotes):
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
        self._here = threading.local()  # .call: the recorded call this thread was served last
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


def active_replay() -> ReplaySession | None:
    """The ReplaySession active in the current context, or None."""
    handler = boundary.active_handler()
    return handler if isinstance(handler, ReplaySession) else None
