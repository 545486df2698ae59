"""How a replay session serves each instrumented call (the boundary-handler half of
:class:`~stepfork.replay.session.ReplaySession`).

Spec replay.txt ("Modes", "Matching guarantees", "Errors") and hybrid-replay.txt; the order of the checks
is interop/REFERENCE-NOTES.md section 6 ("Matching").

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
import re
import threading
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from stepfork.replay.errors import RecordedDependencyError, ReplayError, ReplayMismatchError
from stepfork.replay.ignoring import IgnoredDifference
from stepfork.replay.imported import ImportedCalls, content_not_captured, project_input, served_output
from stepfork.replay.matching import LiveInput, check_identity, check_input, check_outcome
from stepfork.replay.modes import Approver, check_call_policy, check_live_tool, check_mode
from stepfork.replay.plan import RecordedCall
from stepfork.replay.raise_as import RaiseAs
from stepfork.replay.requests import in_order
from stepfork.replay.serving import rebuild_output, recorded_failure
from stepfork.replay.session_renaming import FreshValueRenaming
from stepfork.replay.session_results import SessionResults
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.http_calls import is_http_call
from stepfork.trace.recording import OrphanCallWarning

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class _Held:
    """What ``_decide`` returns for a call the recorded run ended before: its failure, raised once the
    session's run has ended (``ReplaySession._ended``)."""

    failure: BaseException


class CallReplayer(SessionResults, FreshValueRenaming):
    """The boundary-handler half of :class:`~stepfork.replay.session.ReplaySession`: checks 1-9 of the
    module docstring for each call, ``http`` calls served from the request pool, and ``handle``/``ahandle``
    (the :class:`~stepfork.trace.boundary.BoundaryHandler` protocol). The session sets, besides what
    :class:`SessionResults` and :class:`FreshValueRenaming` name: ``hybrid``, ``live_llms``,
    ``allow_live_tools``, ``approve``, ``calls``, ``imported``, ``_ignore``, ``ignored_differences``,
    ``_orphan_warned``, ``_active``, ``_entered``, ``_raise_as`` and ``_ended`` (an Event, set when the run
    ends)."""

    hybrid: bool
    live_llms: frozenset[str]
    allow_live_tools: frozenset[str]
    approve: Approver | None
    calls: list[RecordedCall]
    imported: ImportedCalls | None
    _ignore: dict[str, tuple[re.Pattern[str], ...]]
    ignored_differences: list[IgnoredDifference]
    _orphan_warned: bool
    _active: bool
    _entered: bool
    _raise_as: RaiseAs | None
    _ended: threading.Event
    _here: threading.local

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
            self._here.call = expected
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
            expected, plain, renamed = self._requests.serve(
                call, live, orphan, sends=sends, fresh=self._fresh_inputs()
            )
            self.ignored_differences.extend(
                IgnoredDifference(served.index, served.step, served.label, path, before, after, reason)
                for served in ([expected] if expected is not None else [])
                for path, before, after, reason in renamed
            )
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


def unrecorded_tool_hint(name: str) -> str:
    """The hint of a tool call no recorded call names (:meth:`ReplaySession._unrecorded_tool`)."""
    return (
        f"the recording holds no call of tool {name!r}, so it is refused, not run. A bundle recorded before "
        "Stepfork recorded framework tools (0.2.0 and earlier) holds no call of an OpenAI Agents SDK, "
        "LangChain, smolagents, LlamaIndex or CrewAI tool without @trace_tool: record the run again"
    )
