"""A replayed call's input that differs from the recorded one only by fresh values (NEWCOMER finding 11).

An agent that puts a value it mints into a call's input (a tool's idempotency key ``str(uuid4())``, the
OpenAI ``user=str(uuid4())``) sends another value on every run. ``diff`` compares two recordings' inputs up
to a renaming of fresh values (:mod:`stepfork.replay.noise.origins`); replay's matching does the same, so
the two agree: :class:`RenamedInputs` accepts a live input whose every difference from the recorded one is
a value the replay minted where the recording had a value it minted (or two uuids of a random or time
version), each reported as ``renamed id``, one renaming across the session's calls. Anything else (a
handed-out id, a clock in a prompt, a changed word) stays a divergence.
"""

from __future__ import annotations

from typing import Any

from stepfork.replay.noise.compare import RENAMED, Comparison
from stepfork.replay.noise.origins import Origins
from stepfork.replay.noise.output import json_path
from stepfork.replay.noise.rules import NoiseRules


class RenamedInputs:
    """The renaming of fresh values across one replay's inputs.

    Args:
        recorded: the recording's :class:`Origins` (``readings_given=False``: a clock reading it served is
            served again as it was, so a live reading in its place is the agent's own clock, NEWCOMER6 F2);
            live: the replay's (``ReplaySession.live_origins``).
    """

    def __init__(self, recorded: Origins, live: Origins) -> None:
        self.scope = Comparison(NoiseRules.shipped(), recorded, live)
        """The comparison (and its one renaming) of the replay's inputs; its output continues it."""

    def __call__(
        self, kind: str, expected: Any, actual: Any, ignored: set[str]
    ) -> list[tuple[str, Any, Any, str]] | None:
        """``[(JSONPath, recorded, live, "renamed id")]`` for each difference of ``actual`` (the redacted
        live input of a ``kind`` call: ``tool`` or ``llm``) from ``expected``, when each is a renamed
        fresh value (paths in ``ignored`` aside); None when another difference is left. The pairs it
        bound are kept only when it accepts: a rejected input (another customer, the key of a sibling's
        call) binds nothing."""
        kept = self.scope.renaming
        trial = self.scope.renaming = kept.trial()
        try:
            accepted = self._compared(kind, expected, actual, ignored)
        finally:
            self.scope.renaming = kept
        if accepted is not None:
            self.scope.renaming = trial
        return accepted

    def accepts(self, kind: str, expected: Any, actual: Any) -> bool:
        """True when :meth:`__call__` would accept ``actual`` for ``expected``; binds nothing."""
        kept = self.scope.renaming
        self.scope.renaming = kept.trial()
        try:
            return self._compared(kind, expected, actual, set()) is not None
        finally:
            self.scope.renaming = kept

    def repeats(
        self, kind: str, expected: Any, actual: Any, ignored: set[str]
    ) -> list[tuple[str, Any, Any, str]] | None:
        """As :meth:`__call__`, in a renaming of its own with nothing bound, binding nothing: a poller's
        extra round answered as its last recorded one (``stepfork.replay.requests``) reads the clock anew,
        and that reading's partner is already the recorded round's own."""
        kept = self.scope.renaming
        self.scope.renaming = kept.blank()
        try:
            return self._compared(kind, expected, actual, ignored)
        finally:
            self.scope.renaming = kept

    def _compared(
        self, kind: str, expected: Any, actual: Any, ignored: set[str]
    ) -> list[tuple[str, Any, Any, str]] | None:
        where = "llm_input" if kind == "llm" else "tool_input"
        found = [
            (path, d)
            for d in self.scope.compare(expected, actual, where)
            if (path := json_path(d.path)) not in ignored
        ]
        if not found or any(d.noise != RENAMED for _, d in found):
            return None
        return [(path, d.expected, d.actual, RENAMED) for path, d in found]
