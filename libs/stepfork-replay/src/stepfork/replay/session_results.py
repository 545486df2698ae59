"""What a replay session reports as it stands (spec replay.txt, "Python API"): the calls consumed and
served, the divergence, the summary, and :meth:`SessionResults.verify_complete`. The results part of
:class:`~stepfork.replay.session.ReplaySession`.
"""

from __future__ import annotations

import threading

from stepfork.replay.errors import ReplayError, ReplayMismatchError
from stepfork.replay.matching import CallCursor, incomplete_error
from stepfork.replay.plan import RecordedCall
from stepfork.replay.requests import RequestPool, ServedRequest, not_made
from stepfork.replay.results import ExecutedCall, MatchedCall, ReplaySummary, ServedCalls


class SessionResults:
    """The results of :class:`~stepfork.replay.session.ReplaySession` (its properties and
    :meth:`verify_complete`). The session sets ``mode``, ``_lock`` (an RLock, held while reading what the
    calls change), ``_served``, ``_cursor``, ``_requests``, ``_divergence`` (None),
    ``_divergence_count`` (0) and ``_here`` (a ``threading.local``)."""

    mode: str
    _lock: threading.RLock
    _served: ServedCalls
    _cursor: CallCursor
    _requests: RequestPool
    _divergence: ReplayError | None
    _divergence_count: int
    _here: threading.local

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
    def served_here(self) -> RecordedCall | None:
        """The recorded call the calling thread was last served (or ran live) in the agent's order, or None
        before its first: what a caller that just got a value from :meth:`handle` reads its recorded
        outcome from (``fork``'s token counts) when other threads' calls may have come in between."""
        return getattr(self._here, "call", None)

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
