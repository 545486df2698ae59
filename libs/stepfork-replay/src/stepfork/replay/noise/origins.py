"""Where a value came from: the ids a recording handed to the agent, and which values a run minted
(issue 28; NEWCOMER findings 4, 10 and 11; docs/diff.md "Noise rules", docs/decisions.md).

An id is *handed out* by a recording when it occurs in what the recording gave the agent: a recorded
dependency output (``tool_result`` and ``llm_response`` outputs, SSE events included), a recorded failure
(``error`` events) or the run's input; ids inside longer strings count (a JSON-encoded tool argument,
``lc_run--<uuid>-0`` hands out its UUID too), and so does a minted value found anywhere in those strings
(a tool run in-process that minted a booking id handed it out). A handed-out id must match exactly: an
agent returning the wrong booking id is still caught.

Order matters (NEWCOMER4 F1, F5, F6, F7): a value the agent *sent* in a call's input (a ``tool_call`` or
``llm_request``) before any dependency output held it is the agent's own, not handed out, whatever later
outputs echo it: the model quoting the ticket id the agent's own code made, a tool echoing the agent's
idempotency key, the Responses API echoing ``metadata`` and ``user``, a provider's ``created`` second equal
to the agent's ``str(int(time.time()))`` in that very request. A handed-out value the agent passes on in
another spelling (upper case, a uuid with or without its dashes) is still handed out (NEWCOMER5 F4).

A value is *fresh* when it was not handed out and it was made anew by the run itself: minted from the
system's randomness (``stepfork.trace.minting``: the recording's ``minted.json``, or the live log of the
replay running now), made from the run's clock (an epoch time inside the run's window:
:mod:`stepfork.replay.noise.clock`), or a UUID of a random or time-based version or a ULID, by its own
structure (:func:`stepfork.replay.noise.ids.fresh_by_shape`). Two runs compare up to a one-to-one
renaming of fresh values. A value that merely looks random (a digest of an e-mail address) is not fresh:
it must match. Where a side says what it minted (``minted.json``, a replay's log), structure alone is
not enough (NEWCOMER5 F1: a project id written in the code is a uuid4 the run never made): a random UUID
must be one it minted, and a time-based UUID or ULID (made by native code no hook sees: LangChain's
``lc_run--<uuid7>``) must carry a time inside the run's window.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stepfork.replay.noise.clock import ClockWindow, instants_in, to_the_second
from stepfork.replay.noise.ids import (
    TOKEN,
    embedded_uuids,
    fresh_by_shape,
    hex_fold,
    is_opaque_id,
    may_hold_id,
    shape_times,
)
from stepfork.trace.minting import MIN_NUMBER

GIVING_EVENTS = frozenset({"tool_result", "llm_response", "error", "run_start"})
"""Event types whose payload the recording gives the agent."""
TAKING_EVENTS = frozenset({"tool_call", "llm_request"})
"""Event types whose ``input`` the agent sends to a dependency."""

MIN_ID = 8
SHORTEST_NUMBER = 10 ** (MIN_NUMBER - 1)
"""The smallest integer whose text may be a drawn number (``stepfork.trace.minting``)."""


def _strings(values: Iterable[Any], *, numbers: bool = False) -> Iterable[str]:
    """The strings (and keys) of ``values``; with ``numbers``, also the numbers that could be clock
    readings (1e9 or more) or drawn numbers (integers of :data:`~stepfork.trace.minting.MIN_NUMBER` digits
    or more), as text: a ``created`` time a tool returned as a number is handed out when the agent formats
    it into a string, and so is a code a tool drew."""
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif numbers and _number_text(value):
            yield repr(value)


def _number_text(value: Any) -> bool:
    """True for a number whose text may be a clock reading (1e9 or more) or a drawn number (an integer of
    :data:`~stepfork.trace.minting.MIN_NUMBER` digits or more)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return abs(value) >= 1e9 or (type(value) is int and value >= SHORTEST_NUMBER)


def collect_ids(values: Iterable[Any]) -> set[str]:
    """Every opaque-id token (and UUID inside one, lower case) in the strings and keys of ``values``."""
    found: set[str] = set()
    for value in _strings(values):
        if len(value) >= MIN_ID and may_hold_id(value):
            for match in TOKEN.finditer(value):
                token = match.group()
                if len(token) >= MIN_ID and is_opaque_id(token):
                    found.add(token)
                    found.update(embedded_uuids(token))
    return found


def _payloads(trace: Any) -> Iterable[tuple[bool, Any]]:
    """``(given, payload)`` of each event of ``trace`` in recorded order: what the recording gave the agent
    (``given``: :data:`GIVING_EVENTS`) and what the agent sent (:data:`TAKING_EVENTS`' inputs)."""
    for _, given, payload in _typed_payloads(trace):
        yield given, payload


def _typed_payloads(trace: Any) -> Iterable[tuple[str, bool, Any]]:
    """``(event type, given, payload)`` of each payload :func:`_payloads` yields, in the same order."""
    for event in trace.events:
        kind = str(getattr(event.type, "value", event.type))
        if kind in TAKING_EVENTS:
            yield kind, False, getattr(event, "input", None)
        elif kind == "error":
            yield kind, True, getattr(event, "message", None)
            yield kind, True, getattr(event, "error_type", None)
        elif kind == "run_start":
            yield kind, True, getattr(event, "input", None)
        elif kind in GIVING_EVENTS:
            yield kind, True, getattr(event, "output", None)


class Origins:
    """Where one side's values came from, computed on first use (a replay that sees no differing id
    never scans the bundle).

    Args:
        trace: a :class:`stepfork.trace.Trace` (its events), or None for no recording (nothing handed out).
        values: more values whose ids count as handed out.
        minted: where this side's minted values are (a ``stepfork.trace.minting.Spans``: the live
            ``MintLog`` of a replay); None: the recording's ``minted.json`` when ``trace`` has one.
        clock: this side's run window (:class:`~stepfork.replay.noise.clock.ClockWindow`: a replay's, from
            its start to now); None: the window of ``trace``'s events (none without a trace).
        readings_given: False for the recording's side of a replay's input matching
            (:class:`stepfork.replay.noise.inputs.RenamedInputs`): a token that is wholly one reading of the
            run's clock to the whole second (:func:`~stepfork.replay.noise.clock.to_the_second`) is not
            handed out by a model's response (``llm_response``): the agent's own clock read to the second
            equals a response's ``created`` second by chance whenever the two fall in one second
            (NEWCOMER6 F2: ``?since=<int(time.time())>`` right after a model call). Known limit: an agent
            that passed a response's ``created`` on (the replay serves it verbatim, so it still sends it
            unchanged) and now sends its own clock's second instead is not caught. A finer reading, and a
            reading a tool, a failure or the run's input gave, stay handed out as before.

    Attributes:
        minted: the side's minted values, or None when nothing says what it minted (a bundle recorded
            before ``minted.json`` existed, a trace built in memory): then only :func:`fresh_by_shape`
            values are fresh on this side, except where :attr:`legacy` lets the other side vouch.
        made: where the values this side made anew are (its minted spans and its clock spans, one
            finder for the renaming), or None (no recording, no window).
    """

    def __init__(
        self,
        trace: Any = None,
        values: Iterable[Any] = (),
        *,
        minted: Any = None,
        clock: Any = None,
        readings_given: bool = True,
    ) -> None:
        self._trace = trace
        self._values = list(values)
        self._ids: set[str] | None = None
        self._strings: list[tuple[bool, list[str]]] | None = None
        self._texts: list[tuple[bool, str, str]] | None = None
        self._folded: set[str] | None = None
        self._instants: list[set[int]] | None = None
        self._given_first: dict[str, bool] = {}
        if minted is None and trace is not None:
            from stepfork.trace.minting import minted_of

            minted = minted_of(trace)
        self.minted = minted
        if clock is None and trace is not None:
            clock = ClockWindow.of_trace(trace)
        self._clock = clock
        self._readings_given = readings_given
        self._outside_models: dict[str, bool] = {}
        self.made: Any = _Made(minted, clock) if clock is not None else minted

    @property
    def utc_offset(self) -> int | None:
        """This side's local UTC offset in seconds (``minted.json``'s ``utc_offset``, or the live mint log's),
        or None when nothing states it."""
        offset = getattr(self.minted, "utc_offset", None)
        return offset if isinstance(offset, int) else None

    @property
    def legacy(self) -> bool:
        """True for a recording that says nothing of what it minted (no ``minted.json``)."""
        return self.minted is None and self._trace is not None

    def _sources(self) -> list[tuple[bool, Any]]:
        """``(given, payload)`` in order: the extra ``values`` (given), then the trace's events'."""
        sources: list[tuple[bool, Any]] = [(True, value) for value in self._values]
        if self._trace is not None:
            sources.extend(_payloads(self._trace))
        return sources

    def _new_strings(self) -> list[tuple[bool, list[str]]]:
        """``(given, strings)`` of each source in order (its strings and keys, and its numbers that could be
        clock readings, as text), each string kept at its first occurrence only: a conversation resent in
        every request is scanned once, and only a first occurrence decides. Computed once."""
        if self._strings is None:
            seen: set[str] = set()
            self._strings = []
            for is_given, payload in self._sources():
                strings = [text for text in _strings([payload], numbers=True) if text not in seen]
                seen.update(strings)
                self._strings.append((is_given, strings))
        return self._strings

    @property
    def ids(self) -> set[str]:
        """Every handed-out id token by shape (and the UUIDs inside them, lower case): found in what the
        recording gave before any input the agent sent held it (module docstring)."""
        if self._ids is None:
            given: set[str] = set()
            sent: set[str] = set()
            for is_given, strings in self._new_strings():  # a number's text holds no id
                found = collect_ids(strings)
                if is_given:
                    given.update(found - sent)
                else:
                    sent.update(found - given)
            self._ids = given
        return self._ids

    def handed_out(self, token: str) -> bool:
        """True when ``token`` (an opaque id, or a token holding minted values), a UUID inside it, or a
        minted value inside it, was handed out."""
        if not self._readings_given and self._clock is not None and self._one_reading(token):
            return self._given_outside_models(token)
        ids = self.ids
        if token in ids or any(u in ids for u in embedded_uuids(token)):
            return True
        if self._folded is None:
            self._folded = {f for f in map(hex_fold, ids) if f is not None}
        folded = hex_fold(token)
        if folded is not None and folded in self._folded:  # passed on in another spelling (NEWCOMER5 F4)
            return True
        spans = self.made.spans(token) if self.made is not None else []
        if not spans:
            return False
        # minted values of any shape, clock readings: anywhere in what was given, before the agent sent it
        if self._first_given(token) or any(self._first_given(token[start:end]) for start, end in spans):
            return True
        return self._reading_given(token)

    def _one_reading(self, token: str) -> bool:
        """True when ``token`` is wholly one reading of this side's clock to the whole second, and holds no
        minted value."""
        if not to_the_second(token) or self._clock.spans(token) != [(0, len(token))]:
            return False
        return self.minted is None or not self.minted.spans(token)

    def _given_outside_models(self, token: str) -> bool:
        """For a reading to the whole second (``readings_given`` False): True when the first payload holding
        it (as written, or the same instant in another spelling) was given, a model's response aside."""
        known = self._outside_models.get(token)
        if known is None:
            known = False
            wanted = instants_in(token)
            for kind, given, payload in _typed_payloads(self._trace) if self._trace is not None else ():
                if given and kind == "llm_response":
                    continue
                texts = list(_strings([payload], numbers=True))
                if any(token in text for text in texts) or any(wanted & instants_in(t) for t in texts):
                    known = given
                    break
            self._outside_models[token] = known
        return known

    def _reading_given(self, token: str) -> bool:
        """True when a clock reading of ``token`` says an instant that a given payload's reading said
        first, in any spelling (a tool's ``...Z`` passed on as ``+00:00``: NEWCOMER5 F4)."""
        wanted = instants_in(token)
        if not wanted:
            return False
        texts = self._payload_texts()
        if self._instants is None:
            self._instants = [instants_in(held) for _, held, _ in texts]
        for (is_given, _, _), said in zip(texts, self._instants, strict=True):
            if wanted & said:
                return is_given
        return False

    def _first_given(self, text: str) -> bool:
        """True when the first payload (in recorded order) whose strings hold ``text`` was given."""
        known = self._given_first.get(text)
        if known is None:
            folded = hex_fold(text) or text  # a hex id in any spelling; anything else as written
            known = next(
                (given for given, held, lower in self._payload_texts() if text in held or folded in lower),
                False,
            )
            self._given_first[text] = known
        return known

    def _payload_texts(self) -> list[tuple[bool, str, str]]:
        """``(given, text, text lower-cased without "-")`` of each source in order (its new strings)."""
        if self._texts is None:
            sources = self._new_strings()
            joined = [(given, "\x00".join(strings)) for given, strings in sources]
            self._texts = [(given, held, held.lower().replace("-", "")) for given, held in joined]
        return self._texts

    def is_minted(self, token: str) -> bool:
        """True when ``token`` holds a value this side made anew: minted, or read from its clock."""
        return self.made is not None and bool(self.made.spans(token))

    def fresh(self, token: str) -> bool:
        """True when ``token`` was made anew by this side's run and not handed out (module docstring)."""
        if self.is_minted(token):
            return not self.handed_out(token)
        return fresh_by_shape(token) and self._made_here(token) and not self.handed_out(token)

    def _made_here(self, token: str) -> bool:
        """For a value fresh by its shape only: True when nothing says what this side minted (a bundle
        recorded before ``minted.json``: structure is all there is), else when every UUID or ULID in it is
        time-based and made inside this side's window (a random one would be in the mint log)."""
        if self.minted is None or self._clock is None:
            return True
        times = shape_times(token)
        return bool(times) and all(t is not None and self._clock.holds(t) for t in times)


class _Made:
    """One side's minted spans (None: unknown) and clock spans, as one finder: the minted ones first, a
    clock span where no minted one is."""

    def __init__(self, minted: Any, clock: ClockWindow) -> None:
        self._minted = minted
        self._clock = clock

    def spans(self, text: str) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = self._minted.spans(text) if self._minted is not None else []
        clock = self._clock.spans(text)
        if not clock:
            return found
        kept = [c for c in clock if not any(c[0] < end and start < c[1] for start, end in found)]
        return sorted([*found, *kept])


def fresh_pair(left: Origins, right: Origins, a: str, b: str) -> bool:
    """True when ``a`` (on the ``left`` side) and ``b`` (on the ``right``) may be renamed into each other
    outside a dependency output: both fresh. A recording that says nothing of what it minted (no
    minted.json: recorded before it existed) counts a value as minted when the other side minted its
    counterpart, of the same length and alphabet, and it did not hand the value out."""
    if left.fresh(a) and right.fresh(b):
        return True
    if left.legacy and right.is_minted(b) and right.fresh(b):
        return not left.handed_out(a) and same_alphabet(a, b)
    if right.legacy and left.is_minted(a) and left.fresh(a):
        return not right.handed_out(b) and same_alphabet(a, b)
    return False


_ALPHABETS = (
    frozenset("0123456789abcdef"),
    frozenset("0123456789ABCDEF"),
    frozenset("0123456789-abcdef"),
    frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
    frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
)


def same_alphabet(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are as long and the first of hex (lower, upper), uuid, base64url and
    base64 that holds all of one's characters holds all of the other's."""

    def alphabet(text: str) -> int:
        chars = set(text)
        return next((n for n, letters in enumerate(_ALPHABETS) if chars <= letters), -1)

    return len(a) == len(b) and alphabet(a) == alphabet(b) != -1
