"""A ReplaySession that counts its divergences, for ``minimize``'s "Clean Replay" row (docs/minimize.md).

ReplaySession keeps only the first divergence (``divergence``). A minimized bundle from which calls the
agent still makes were removed diverges once per such call: the strict cursor does not advance on a
divergence, so the next call is matched against the same recorded call. Counting every divergence the
session raises (not RecordedDependencyError, which is the recorded failure served again) tells how many.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from stepfork.replay import RecordedDependencyError, ReplayDecision, ReplayError, ReplaySession
from stepfork.trace.boundary import BoundaryCall

T = TypeVar("T")

__all__ = ["CountingSession"]


class CountingSession(ReplaySession):
    """A :class:`~stepfork.replay.ReplaySession` (same arguments, same behaviour) that also counts the
    distinct ReplayErrors other than RecordedDependencyError raised at its boundary, caught by the agent or
    not (an error re-raised through an enclosing live call's body counts once).

    Attributes:
        divergence_count: how many such errors were raised so far (0 for a clean replay).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._raised: list[ReplayError] = []  # kept alive, so identity tells a re-raise from a new error
        self._count_lock = threading.Lock()

    @property
    def divergence_count(self) -> int:
        """Number of distinct divergences raised so far."""
        return len(self._raised)

    def _note(self, error: ReplayError) -> None:
        if isinstance(error, RecordedDependencyError):
            return
        with self._count_lock:
            if not any(seen is error for seen in self._raised):
                self._raised.append(error)

    def handle(self, call: BoundaryCall, body: Callable[[], T], *, orphan: bool = False) -> T:
        """:meth:`ReplaySession.handle`, counting a divergence it raises."""
        try:
            return super().handle(call, body, orphan=orphan)
        except ReplayError as error:
            self._note(error)
            raise

    async def ahandle(
        self, call: BoundaryCall, body: Callable[[], Awaitable[T]], *, orphan: bool = False
    ) -> T:
        """:meth:`ReplaySession.ahandle`, counting a divergence it raises."""
        try:
            return await super().ahandle(call, body, orphan=orphan)
        except ReplayError as error:
            self._note(error)
            raise

    def before_tool(self, *, name: str, input: Any) -> ReplayDecision:
        """:meth:`ReplaySession.before_tool`, counting a divergence it raises."""
        try:
            return super().before_tool(name=name, input=input)
        except ReplayError as error:
            self._note(error)
            raise

    def before_llm(self, *, provider: str | None, model: str, input: Any) -> ReplayDecision:
        """:meth:`ReplaySession.before_llm`, counting a divergence it raises."""
        try:
            return super().before_llm(provider=provider, model=model, input=input)
        except ReplayError as error:
            self._note(error)
            raise
