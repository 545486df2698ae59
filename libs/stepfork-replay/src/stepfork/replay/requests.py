"""Requests outside the agent's order: the recorded ``http`` calls, served by their request (issue 29).

A recording's ``http`` calls (:mod:`stepfork.trace.http_calls`: requests from threads that are not the
agent's, requests that are not LLM API calls) are not in the cursor's plan: their timing is a library's,
not the agent's. :class:`RequestPool` holds them by their redacted canonical input (method, URL, body); a live
request takes the first unserved recorded one with the same input, whenever it comes, and repeated identical
requests are served in recorded order. Failing that, it takes the first unserved recorded one with the same
label (method, URL without its query) whose input equals it up to the session's one renaming of fresh values
(:class:`FreshInputs`; an idempotency key ``str(uuid4())``, a clock reading in the body or query: NEWCOMER6
F2), tried as a trial that binds nothing, the one taken binding its pairs. A request the pool does not hold
(or holds no more: it came more often than recorded) is refused by the session with :func:`not_recorded`,
which is the replay's divergence. A recorded request from a background thread that never comes is not a
missing call: a background fetch may not run before a faster replay ends. A request the agent's own context
made (the recorder's ``background`` fact is false, ``concurrency.json``) is the agent's behaviour: a POST that
issued a refund. The order it comes in is still free, but when the replay ends every such request must have
come (:meth:`RequestPool.unmade`, :func:`not_made`), or the replay diverged.

One exception to "not more often than recorded": a *background* request (from a thread without the replay's
context: a feature-flag poller, a heartbeat on a timer) that repeats a recorded request after every recorded
copy of it was served gets the last recorded answer again, noted ``repeated``; failing an exact copy, the last
recorded request of its label whose input it equals up to a renaming of fresh values of its own (a heartbeat's
``time.time()``: each round reads the clock anew, so it binds nothing; NEWCOMER6 F3). Such a thread polls on
its own clock, and a replay answers faster than the server did, so it polls more often within the same run;
that is no change of the agent. The agent's own requests (in its context) stay
strict: one more than recorded is a divergence. The round a background thread had in flight when the
recorded run ended (``RecordedCall.unfinished``) is timing too: it gets the last answer of the same request
when one was recorded, and is held until the replay's run ends (as recorded: no answer before the end)
only when none was.

Telemetry exports (:func:`stepfork.trace.http_calls.is_telemetry`) are never matched: in a sealed replay
each one is answered :data:`TELEMETRY_ANSWER` and noted as ``acknowledged`` (:meth:`RequestPool.acknowledge`),
whatever its body and whether or not the recording holds one (issue 30: a trace export carries the run's
span ids, times and batching, and the exporter's thread sends it when its timer says, so a replay that ran
past the timer diverged on unchanged code).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from stepfork.replay.diagnostics import unmade_call_diagnostic
from stepfork.replay.errors import ReplayMismatchError
from stepfork.replay.matching import (
    CallCursor,
    LiveInput,
    Renamed,
    build_diagnostic,
    check_input,
    check_outcome,
)
from stepfork.replay.plan import RecordedCall
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.concurrency import ConcurrencyFacts
from stepfork.trace.http_calls import is_http_call, is_telemetry

TELEMETRY_ANSWER: dict[str, Any] = {"status": 204, "headers": {}}
"""What a sealed replay answers a telemetry export with (the HTTP capture's output form): ``204 No
Content``, the acknowledgement every exporter takes as sent."""


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One ``http`` call a replay answered.

    Attributes:
        label: ``http METHOD URL`` (the URL without its query).
        step: the ``step`` of the recorded call served, or None when the request ran live (live and
            hybrid modes, for a request the recording does not hold).
        background: True when it came from a thread without the replay's context.
        action: ``"substituted"`` (the recorded response served), ``"repeated"`` (a background request
            made more often than recorded, answered with the last recorded response again: module
            docstring), ``"executed"`` (sent live), ``"acknowledged"`` (a telemetry export answered
            :data:`TELEMETRY_ANSWER`, not sent) or ``"refused"`` (a connection to a telemetry collector the
            seal refused, not a divergence).
    """

    label: str
    step: int | None
    background: bool
    action: str = "substituted"

    def to_dict(self) -> dict[str, object]:
        """``{label, step, background, action}`` (JSON-ready)."""
        return {"label": self.label, "step": self.step, "background": self.background, "action": self.action}


def agent_requests(visible: Iterable[RecordedCall], facts: ConcurrencyFacts | None) -> frozenset[str]:
    """The call event ids of the ``http`` calls among ``visible`` (the calls a replay of this mode sees,
    nested ones hidden) that the agent's own context made: their ``background`` fact is false
    (``concurrency.json``, docs/format.md). Telemetry exports are left out (a sealed replay answers them
    unmatched), and so is every call of a bundle whose facts do not say (recorded before this release, or
    without ``concurrency.json``): for those, a request that does not come stays informational."""
    if facts is None:
        return frozenset()
    ids: set[str] = set()
    for call in visible:
        if call.kind != "tool" or not is_http_call(call.name):
            continue
        fact = facts.calls.get(call.call_event_id)
        if fact is None or fact.background is not False:
            continue
        _, method, url = call.name.split(" ", 2)
        if not is_telemetry(method, url):
            ids.add(call.call_event_id)
    return frozenset(ids)


def split_requests(calls: Iterable[RecordedCall]) -> tuple[list[RecordedCall], list[RecordedCall]]:
    """``(the other calls, the http calls)`` of ``calls``, each in order and re-indexed 0..n-1."""
    others: list[RecordedCall] = []
    requests: list[RecordedCall] = []
    for call in calls:
        into = requests if call.kind == "tool" and is_http_call(call.name) else others
        into.append(replace(call, index=len(into)) if call.index != len(into) else call)
    return others, requests


@dataclass(frozen=True, slots=True)
class FreshInputs:
    """A session's renaming of fresh values, as the pool asks it (``stepfork.replay.session_renaming``).

    Attributes:
        renames_to: ``(live, recorded call) -> bool``: the live input equals the recorded one up to the
            renaming, as a trial that binds nothing.
        renamed: ``(recorded call, live value, ignored paths) -> [(JSONPath, recorded, live, reason)] |
            None``: the same question, binding the pairs when it accepts (``check_input``'s ``renamed``).
        repeats: as ``renamed``, in a renaming of its own that binds nothing: a repeated round's fresh values
            (a heartbeat's ``time.time()``) are new ones, never the last recorded round's partners.
    """

    renames_to: Callable[[LiveInput, RecordedCall], bool]
    renamed: Renamed
    repeats: Renamed


class RequestPool(CallCursor):
    """The recorded ``http`` calls of a session, served by their request (module docstring). Not
    thread-safe on its own: the session serializes access. ``calls`` are the http calls (index 0..k-1);
    :meth:`recorded_input_bytes` lets the session's fingerprint checks read them as a cursor's.
    ``expected``: the call event ids of the requests that must come before the replay ends
    (:func:`agent_requests`; :meth:`unmade`)."""

    __slots__ = ("_by_key", "_expected", "_last", "_legacy", "_others", "served")

    def __init__(
        self,
        calls: list[RecordedCall],
        others: Sequence[RecordedCall] = (),
        expected: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(calls)
        self._by_key: dict[bytes, deque[RecordedCall]] = {}
        self._last: dict[bytes, RecordedCall] = {}  # the last recorded call of each input (repeats)
        # per input: (how many recorded, the expected ones in recorded order) (unmade)
        self._expected: dict[bytes, tuple[int, list[RecordedCall]]] = {}
        for call in calls:
            key = self.recorded_input_bytes(call)
            self._by_key.setdefault(key, deque()).append(call)
            if not call.unfinished:  # a repeat gets an answer the server gave
                self._last[key] = call
            if call.call_event_id in expected and not call.unfinished:  # in flight at the end: optional
                self._expected.setdefault(key, (0, []))[1].append(call)
        for key, (_, mine) in self._expected.items():
            self._expected[key] = (len(self._by_key[key]), mine)
        self.served: list[ServedRequest] = []
        self._others = others
        self._legacy: bool | None = None

    @property
    def legacy(self) -> bool:
        """True when the recording holds requests of the HTTP capture as LLM calls in the agent's order
        (``others``: the cursor's calls), as recordings made before issue 29 do; computed on first use."""
        if self._legacy is None:
            self._legacy = any(call.kind == "llm" and _captured(call) for call in self._others)
        return self._legacy

    def serve(
        self,
        call: BoundaryCall,
        live: LiveInput,
        background: bool,
        *,
        sends: bool,
        fresh: FreshInputs | None = None,
    ) -> tuple[RecordedCall | None, bool, list[tuple[str, Any, Any, str]]]:
        """Take the recorded call for ``call`` (input ``live``) and check its stored fingerprints; return it,
        what ``check_outcome`` says of its output (True: checked, no tagged form) and the input differences
        accepted as renamed fresh values (``[(JSONPath, recorded, live, "renamed id")]``, usually empty), or
        ``(None, False, [])`` when the recording does not hold it and ``sends`` (live and hybrid modes: the
        request is sent).

        ``fresh``: the session's renaming of fresh values (:class:`FreshInputs`): a request the pool holds no
        exact copy of takes the first unserved recorded one of its method and URL (query aside) whose input
        equals it up to that renaming, and a background one past its recorded rounds the last one's answer
        (module docstring); None: exact inputs only.

        Raises:
            ReplayMismatchError: ``request_not_recorded`` (:func:`not_recorded`), or the fingerprint and
                outcome codes of :func:`~stepfork.replay.matching.check_input` and ``check_outcome``.
        """
        expected = self.take(live)
        if expected is None and fresh is not None:
            expected = self._take_renamed(call.name, live, fresh)
        action, checked_with = "substituted", fresh.renamed if fresh is not None else None
        if background and not sends and (expected is None or expected.unfinished):
            # a poller's extra round, or the round the recorded run ended during: the last answer again
            last = self._last.get(live.bytes)
            if last is None and fresh is not None:
                last = self._last_renamed(call.name, live, fresh.repeats)
            if last is not None:
                expected, action = last, "repeated"
                checked_with = fresh.repeats if fresh is not None else None
        if expected is None:
            if not sends:
                raise not_recorded(call, live, self, background=background)
            self.served.append(ServedRequest(call.name, None, background, "executed"))
            return None, False, []
        # the stored input fingerprint; a renamed input commits its pairs here (a rejected one bound nothing)
        accepted = check_input(self, expected, call, live, compare=True, renamed=checked_with)
        plain = check_outcome(self, expected, call, live)  # an outcome, its stored fingerprint
        self.served.append(ServedRequest(expected.name, expected.step, background, action))
        return expected, plain, accepted if action == "substituted" else []

    def _take_renamed(self, label: str, live: LiveInput, fresh: FreshInputs) -> RecordedCall | None:
        """The first unserved recorded call labelled ``label`` whose input equals ``live``'s up to the
        session's renaming of fresh values, taken; None when there is none. Each candidate is a trial that
        binds nothing (``fresh.renames_to``): :meth:`serve` binds the pairs of the one taken."""
        for candidate in self.calls:
            if candidate.label != label:
                continue
            waiting = self._by_key.get(self.recorded_input_bytes(candidate))
            if not waiting or not any(c is candidate for c in waiting):
                continue
            if fresh.renames_to(live, candidate):
                waiting.remove(candidate)
                return candidate
        return None

    def _last_renamed(self, label: str, live: LiveInput, repeats: Renamed) -> RecordedCall | None:
        """The last recorded call labelled ``label`` the server answered (not ``unfinished``) whose input
        equals ``live``'s up to a renaming of fresh values of its own (``repeats`` binds nothing); None
        when there is none."""
        for candidate in reversed(self.calls):
            answered = candidate.label == label and not candidate.unfinished and candidate.input is not None
            if answered and repeats(candidate, live.value, set()) is not None:
                return candidate
        return None

    def acknowledge(self, call: BoundaryCall, background: bool) -> dict[str, Any] | None:
        """:data:`TELEMETRY_ANSWER` (a fresh copy) when ``call`` is a telemetry export, noted as
        ``acknowledged``; None for any other request."""
        value = call.input if isinstance(call.input, dict) else {}
        method, url = value.get("method"), value.get("url")
        if not (isinstance(method, str) and isinstance(url, str) and is_telemetry(method, url)):
            return None
        self.served.append(ServedRequest(call.name, None, background, "acknowledged"))
        return {"status": TELEMETRY_ANSWER["status"], "headers": {}}

    def refused(self, where: str) -> None:
        """Note a connection to a telemetry collector (``host:port``) that the seal refused."""
        self.served.append(ServedRequest(f"telemetry {where}", None, True, "refused"))

    def take(self, live: LiveInput) -> RecordedCall | None:
        """The first unserved recorded call whose input is ``live``'s (redacted, canonical), taken; None
        when there is none (never recorded, or every one of them served already)."""
        waiting = self._by_key.get(live.bytes)
        if not waiting:
            return None
        return waiting.popleft()

    def holds(self, live: LiveInput) -> bool:
        """True when :meth:`take` would find a recorded call for ``live``."""
        return bool(self._by_key.get(live.bytes))

    def consume(self, expected: RecordedCall) -> None:
        """Nothing: :meth:`take` already took ``expected``."""

    @property
    def pending(self) -> int:
        """Recorded requests not served (never a missing call: see the module docstring)."""
        return sum(len(waiting) for waiting in self._by_key.values())

    def remaining_labels(self) -> tuple[str, ...]:
        """Labels of the recorded requests not served, in recorded order."""
        left = {id(call) for waiting in self._by_key.values() for call in waiting}
        return tuple(call.label for call in self.calls if id(call) in left)

    def peek(self) -> RecordedCall | None:
        """None: requests are never next in an order."""
        return None

    def unmade(self) -> list[RecordedCall]:
        """The expected requests (the agent's own: ``expected``) that did not come, in recorded order.

        Identical requests (one input) are interchangeable: a live one takes the first recorded one,
        whichever context made it, so per input the requests that came count against the expected ones
        first, and only the expected ones beyond them are unmade."""
        missing: list[RecordedCall] = []
        for key, (recorded, mine) in self._expected.items():
            came = recorded - len(self._by_key[key])
            missing.extend(mine[came:])
        return sorted(missing, key=lambda call: call.index)


def in_order(
    call: BoundaryCall,
    as_llm: Callable[[], BoundaryCall],
    pool: RequestPool,
    cursor: CallCursor,
    compares: Callable[[RecordedCall], bool],
) -> BoundaryCall:
    """``call`` (an ``http`` call), or ``as_llm()`` (the same request as an LLM call) when ``pool`` does not
    hold it, the recording holds captured requests in the agent's order (``pool.legacy``: recorded before
    issue 29) and the LLM call ``cursor`` would take next is exactly it (kind, model, provider, redacted
    canonical input). Called with the session's lock held."""
    if not pool.legacy or pool.holds(LiveInput(call.input)):
        return call
    llm = as_llm()
    live = LiveInput(llm.input)
    expected = cursor.select(llm, live, compares)
    if (
        expected is not None
        and expected.kind == "llm"
        and (expected.model, expected.provider) == (llm.model, llm.provider)
        and live.bytes == cursor.recorded_input_bytes(expected)
    ):
        return llm
    return call


def not_recorded(
    call: BoundaryCall, live: LiveInput, pool: RequestPool, *, background: bool
) -> ReplayMismatchError:
    """The divergence of a request ``pool`` does not hold (``request_not_recorded``): named by method and
    URL, where it came from, and what the recording holds for the same method and URL."""
    url = live.value.get("url") if isinstance(live.value, dict) else None
    method = call.name.split(" ", 2)[1]
    where = "from a thread without the replay's context" if background else "from the agent"
    same = [c for c in pool.calls if c.label == call.name]
    if same:
        times = "once" if len(same) == 1 else f"{len(same)} times"
        held = (
            f"the recording holds a request to this URL {times}, with another query or body, "
            "or not this often"
        )
        # the first such request, compared: the path of the first difference (a changed query or body)
        diagnostic = replace(
            build_diagnostic(same[0], call, live, with_difference=True), index=None, step=same[0].step
        )
    else:
        count = len(pool.calls)
        held = f"the recording holds no request to this URL ({count} outside the agent's order)"
        diagnostic = replace(build_diagnostic(None, call, live), missing="no such request in the recording")
    diagnostic = replace(
        diagnostic,
        hint="a request the recorded run did not make (a changed URL or body, a new background fetch, "
        "telemetry): instrument or stop it, or record the run again",
    )
    return ReplayMismatchError(
        f"HTTP request not in the recording, refused before it was sent: {method} "
        f"{url if isinstance(url, str) else call.name.split(' ', 2)[2]} {where}; {held}",
        code="request_not_recorded",
        diagnostic=diagnostic,
    )


def not_made(calls: Sequence[RecordedCall]) -> ReplayMismatchError:
    """The divergence of recorded requests the agent's context made that never came (``request_not_made``;
    ``calls``: :meth:`RequestPool.unmade`, at least one): named by method and URL, the first described."""
    first = calls[0]
    shown = ", ".join(_method_url(call) for call in calls[:5])
    more = f" and {len(calls) - 5} more" if len(calls) > 5 else ""
    diagnostic = unmade_call_diagnostic(
        first,
        missing="the replay ended without this request",
        hint="the agent made this request from its own context in the recorded run and not in this replay "
        "(a skipped tool, a side effect no longer issued); requests from background threads may stay away",
    )
    return ReplayMismatchError(
        f"recorded http call not made: {shown}{more}",
        code="request_not_made",
        diagnostic=diagnostic,
    )


def _method_url(call: RecordedCall) -> str:
    """``METHOD URL`` of a recorded ``http`` call (the URL as recorded, query included)."""
    _, method, bare = call.name.split(" ", 2)
    url = call.input.get("url") if isinstance(call.input, dict) else None
    return f"{method} {url if isinstance(url, str) else bare}"


def _captured(call: RecordedCall) -> bool:
    """True when the HTTP capture recorded ``call`` (an ``http`` call, or an LLM call of its input form)."""
    if call.kind == "tool":
        return is_http_call(call.name)
    return isinstance(call.input, dict) and {"method", "path", "body"} <= set(call.input)


def capture_missing(session: Any) -> str | None:
    """Why ``session``'s replay could not run as recorded, when the HTTP capture it was recorded with is
    not installed in this process, else None: the replay was refused at the seal (``network_sealed``),
    the recording holds captured HTTP calls (LLM calls with the capture's ``{"method", "path", "body"}``
    input, or ``http`` calls), and no client of this process was ever instrumented. Such a check cannot
    run (``stepfork run``: could_not_execute), it is no regression of the agent (issue 29)."""
    error = getattr(session, "divergence", None)
    if getattr(error, "code", None) != "network_sealed":
        return None
    capture = sys.modules.get("stepfork.integrations._http_capture")
    if capture is not None and getattr(capture, "installed", False):
        return None
    requests = getattr(getattr(session, "_requests", None), "calls", ())
    calls = [*getattr(session, "calls", ()), *requests]
    if not any(_captured(call) for call in calls):
        return None
    return (
        "the bundle's HTTP requests were recorded by Stepfork's HTTP capture, which this process never "
        "installed (the replay reached the network seal instead): export a bundle of `stepfork record -- "
        "python ...` in the same form (stepfork export BUNDLE --pytest -o TEST.py -- python SCRIPT ARGS), "
        "or instrument the agent's client (instrument_openai, instrument_httpx, instrument_urllib3, "
        "instrument_aiohttp, instrument_urllib, instrument_http_client)"
    )
