"""The boundary handler of a fork (docs/fork.md): a replay up to the fork point, a recording from there on.

:class:`ForkHandler` is the handler the forked run's calls reach. Each call goes to one of its two parts,
chosen once, when the call starts (:meth:`ForkHandler.handler_for_call`, while calls before the fork point
remain to be served):

- the frozen part (:class:`_FrozenPart`) is a replay (``is_replay``): the replay session serves the call
  (matched as in frozen replay, an ``--override`` replacing its output) and the fork's recorder records
  what was served. An HTTP capture rebuilds the response from it, as in any replay.
- the live part (:class:`_LivePart`) is the fork's recording (``open_call`` and the rest are the
  recorder's), behind the fork's check that the call may run live (``--live-llm``, ``--allow-live-tool``).
  An HTTP capture sends the request and records the response as in any recording, a stream as it passes.

The integrations that take another path for a replay than for a recording ask for the part once per call
(:func:`stepfork.trace.boundary.handler_for_call`), so the path they take and the part that serves the
call agree: before, the HTTP captures saw one handler that was neither, took the path of a handler that
always runs the body, and failed on every frozen call (``IndexError``, NEWCOMER3 finding 4).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class ForkHandler:
    """Boundary handler of a fork: frozen (through the replay ``session``) until ``frozen_count`` calls
    are consumed, live afterwards; every call is recorded by ``recorder``.

    Args:
        session: the frozen ``ReplaySession`` of the parent bundle (entered by the caller).
        recorder: the ``RecordingSession`` of the forked run (entered by the caller).
        frozen_count: the number of recorded calls before the fork point.
        overrides: ``{recorded call index: JSON value}`` replacing those calls' outputs.
        live_llms: the LLM labels allowed live (empty: every LLM).
        allow_tools: the tools whose bodies may run live.

    Attributes:
        live_calls: how many calls ran live so far.
        stands_for: ``(session, recorder)``: while the three are active, a call from a thread without
            the fork's context goes to this handler, as to a lone replay or recording
            (:func:`stepfork.trace.boundary.resolve_handler`), never ``BoundaryContextError``.
    """

    is_replay = False

    def __init__(
        self,
        session: Any,
        recorder: Any,
        frozen_count: int,
        overrides: Mapping[int, Any],
        live_llms: frozenset[str],
        allow_tools: frozenset[str],
    ) -> None:
        self.session, self.recorder, self.frozen_count = session, recorder, frozen_count
        self.overrides, self.live_llms, self.allow_tools = overrides, live_llms, allow_tools
        self.live_calls = 0
        self.stands_for = (session, recorder)
        # work submitted to a thread pool runs in the fork as the parent bundle was recorded
        # (stepfork.trace.executors): a bundle recorded before that rule keeps it out, as its replay does
        self.submit_carries_context = bool(getattr(session, "submit_carries_context", False))
        self._frozen = _FrozenPart(self)
        self._live = _LivePart(self)

    def frozen_now(self) -> bool:
        """True while recorded calls before the fork point remain to be served."""
        return bool(self.session.consumed < self.frozen_count)

    def handler_for_call(self) -> Any:
        """The part that takes the call about to start: the frozen part (a replay) before the fork point,
        the live part (the recording) from it on (module docstring)."""
        return self._frozen if self.frozen_now() else self._live

    def handle(self, call: Any, body: Callable[[], T], *, orphan: bool = False) -> T:
        """Serve frozen (with overrides) before the fork point, run live after it; record both."""
        return self.handler_for_call().handle(call, body, orphan=orphan)  # type: ignore[no-any-return]

    async def ahandle(self, call: Any, body: Callable[[], Awaitable[T]], *, orphan: bool = False) -> T:
        """Async :meth:`handle`."""
        return await self.handler_for_call().ahandle(call, body, orphan=orphan)  # type: ignore[no-any-return]

    def override(self, call: Any) -> tuple[bool, Any]:
        """``(True, value)`` when the call the session just served has an override, else ``(False, None)``."""
        last = self.session.last_consumed_index
        index = -1 if last is None else last
        if index in self.overrides:
            from stepfork.trace import from_jsonable

            return True, from_jsonable(self.overrides[index], call.return_type)
        return False, None

    def check_live(self, call: Any) -> None:
        """Count ``call`` as live, or refuse it before it runs.

        An ``http`` call (a request the HTTP capture saw that is not an LLM API call, written as a tool
        named ``http METHOD URL``; :mod:`stepfork.trace.http_calls`) is no tool of the agent's: it runs
        live as the same request from an uninstrumented client does once the seal has lifted at the fork
        point, and as live replay sends it (docs/fork.md; docs/decisions.md).

        Raises:
            ReplayPolicyError: ``live_tool_not_authorized`` for a tool not in ``allow_tools``;
                ``live_llm_not_listed`` for an LLM outside a non-empty ``live_llms``.
        """
        from stepfork.replay import ReplayPolicyError
        from stepfork.trace.http_calls import is_http_call

        if call.kind == "tool" and call.name not in self.allow_tools and not is_http_call(call.name):
            raise ReplayPolicyError(
                f"fork: live tool {call.name!r} after the fork point requires explicit authorization "
                "(--allow-live-tool); its body did not run",
                code="live_tool_not_authorized",
            )
        label = f"{call.provider}/{call.model}" if call.provider else str(call.model)
        if call.kind == "llm" and self.live_llms and label not in self.live_llms:
            raise ReplayPolicyError(
                f"fork: live LLM {label!r} is not among --live-llm; its call did not run",
                code="live_llm_not_listed",
            )
        self.live_calls += 1

    def served(self, call: Any, body: Callable[[], Any], orphan: bool) -> Callable[[], Any]:
        """The body the recorder runs for a frozen call: the session's served output, or its override.

        A served LLM call comes back as an :class:`~stepfork.trace.LLMOutput` carrying the recorded
        ``llm_response``'s token counts and cost, so the fork's recorder writes them as the recording did
        (:meth:`_FrozenPart.handle` hands the caller its value); an overridden output has no recorded usage.
        """
        from stepfork.replay import RecordedDependencyError

        def serve() -> Any:
            try:
                value = self.session.handle(call, body, orphan=orphan)
            except RecordedDependencyError:
                hit, new = self.override(call)
                if hit:
                    return new
                raise
            hit, new = self.override(call)
            return new if hit else self.with_usage(call, value)

        return serve

    def with_usage(self, call: Any, value: Any) -> Any:
        """``value`` (what the session served for ``call``) as an ``LLMOutput`` with the usage of the
        recorded ``llm_response`` it was served from, when ``call`` is an LLM call and that event has any;
        else ``value`` itself. The recorded call is the one this thread was served (``served_here``):
        concurrent LLM calls each keep their own counts."""
        recorded = self.session.served_here
        if call.kind != "llm" or recorded is None:
            return value
        if recorded.kind != "llm" or recorded.end_position is None:
            return value
        from stepfork.analysis.inspection.rows import USAGE_FIELDS
        from stepfork.trace import LLMOutput

        response = self.session.trace.events[recorded.end_position]
        usage = {name: getattr(response, name, None) for name in USAGE_FIELDS}
        return value if all(v is None for v in usage.values()) else LLMOutput(value, **usage)

    def opened_if_live(self) -> None:
        """At the fork point (the last frozen call served) the run goes live: the network seal lifts."""
        if not self.frozen_now():
            self.session.open_network()


class _FrozenPart:
    """The fork before its fork point: a replay whose served outputs the fork's recorder records.

    ``calls``, ``metadata`` and ``route_request`` are the replay session's: what an HTTP capture reads from
    a replay (a 0.2.0 recording's request form, the SDK version recorded, a request held as an LLM call).
    """

    is_replay = True

    def __init__(self, fork: ForkHandler) -> None:
        self._fork = fork

    @property
    def calls(self) -> Any:
        """The session's visible recorded calls."""
        return self._fork.session.calls

    def metadata(self, name: str) -> Any:
        """The parent bundle's extension file ``<name>.json`` (``ReplaySession.metadata``)."""
        return self._fork.session.metadata(name)

    def route_request(self, call: Any, as_llm: Callable[[], Any]) -> Any:
        """The call to replay a request as (``ReplaySession.route_request``)."""
        return self._fork.session.route_request(call, as_llm)

    def handle(self, call: Any, body: Callable[[], T], *, orphan: bool = False) -> T:
        """Serve ``call`` from the recording (or its override) and record what was served, with the
        recorded token usage of an LLM call (:meth:`ForkHandler.served`); returns the served value."""
        fork = self._fork
        try:
            return _value(fork.recorder.handle(call, fork.served(call, body, orphan), orphan=orphan))  # type: ignore[no-any-return]
        finally:
            fork.opened_if_live()

    async def ahandle(self, call: Any, body: Callable[[], Awaitable[T]], *, orphan: bool = False) -> T:
        """Async :meth:`handle` (the body never runs: the call is served)."""
        fork = self._fork
        serve = fork.served(call, lambda: None, orphan)

        async def frozen() -> Any:
            return serve()

        try:
            return _value(await fork.recorder.ahandle(call, frozen, orphan=orphan))  # type: ignore[no-any-return]
        finally:
            fork.opened_if_live()


def _value(served: Any) -> Any:
    """What the caller of a frozen call gets: the value of the ``LLMOutput`` :meth:`ForkHandler.served`
    wrapped for the recorder (a session never serves an ``LLMOutput`` itself), else ``served``."""
    from stepfork.trace import LLMOutput

    return served.value if isinstance(served, LLMOutput) else served


class _LivePart:
    """The fork from its fork point on: its recording, each call first checked by
    :meth:`ForkHandler.check_live`. Every other attribute (``close_call``, ``fail_call``,
    ``add_metadata``, ``metadata``...) is the recorder's own."""

    is_replay = False

    def __init__(self, fork: ForkHandler) -> None:
        self._fork = fork

    def handle(self, call: Any, body: Callable[[], T], *, orphan: bool = False) -> T:
        """Run ``call``'s body live and record it (refused first when it may not run live)."""
        self._fork.check_live(call)
        return self._fork.recorder.handle(call, body, orphan=orphan)  # type: ignore[no-any-return]

    async def ahandle(self, call: Any, body: Callable[[], Awaitable[T]], *, orphan: bool = False) -> T:
        """Async :meth:`handle`."""
        self._fork.check_live(call)
        return await self._fork.recorder.ahandle(call, body, orphan=orphan)  # type: ignore[no-any-return]

    def open_call(self, call: Any, snapshot: Callable[[], Any], *, orphan: bool = False) -> Any:
        """Record the call event of a call that completes later, a streamed response (refused first when
        it may not run live); ``RecordingSession.open_call``."""
        self._fork.check_live(call)
        return self._fork.recorder.open_call(call, snapshot, orphan=orphan)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fork.recorder, name)
