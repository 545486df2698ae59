"""What a replay reports about the calls it served: MatchedCall, ExecutedCall, ReplayDecision, ReplaySummary
(spec replay.txt "Trajectory assertions", hybrid-replay.txt; interop/REFERENCE-API.md "Frozen dataclasses").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepfork.replay.matching import LiveInput
from stepfork.trace.models import EventStatus


@dataclass(frozen=True, slots=True)
class MatchedCall:
    """A recorded call the replay consumed: ``index`` (0-based, visible calls), kind, label, and
    ``action`` ``"substituted"`` (recorded response served) or ``"executed"`` (body ran)."""

    index: int
    kind: str
    label: str
    action: str


class ExecutedCall:
    """A call the replay reached and consumed (spec: ``replay.executed_calls``). Immutable.

    Attributes:
        index, kind, label, action: as :class:`MatchedCall`.
        input: the redacted live input (JSON), redacted on first access.
        status: the recorded :class:`EventStatus` when substituted (``error`` for a recorded failure);
            None when the body executed, because the recorded status does not describe the new response.
        step: ``step`` of the recorded call event.
    """

    __slots__ = ("_input", "action", "index", "kind", "label", "status", "step")

    index: int
    kind: str
    label: str
    status: EventStatus | None
    action: str
    step: int
    _input: Any

    def __init__(
        self,
        index: int,
        kind: str,
        label: str,
        input: Any,
        status: EventStatus | None,
        action: str,
        step: int = 0,
    ) -> None:
        set_ = object.__setattr__
        for name, value in (
            ("index", index),
            ("kind", kind),
            ("label", label),
            ("_input", input),
            ("status", status),
            ("action", action),
            ("step", step),
        ):
            set_(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ExecutedCall is immutable (cannot set {name!r})")

    @property
    def input(self) -> Any:
        """The redacted live input (JSON)."""
        value = self._input
        return value.value if isinstance(value, LiveInput) else value

    def _key(self) -> tuple[Any, ...]:
        return (self.index, self.kind, self.label, self.input, self.status, self.action, self.step)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExecutedCall) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ExecutedCall(index={self.index}, kind={self.kind!r}, label={self.label!r}, "
            f"input={self.input!r}, status={self.status!r}, action={self.action!r}, step={self.step})"
        )


@dataclass(frozen=True, slots=True)
class ReplayDecision:
    """What :meth:`ReplaySession.before_tool`/``before_llm`` decided: ``execute`` the body, or return
    ``value`` (the recorded output); ``matched`` is the consumed call."""

    execute: bool
    value: Any
    matched: MatchedCall


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """``mode``, the ``matched`` calls and the labels of the ``remaining`` (unconsumed) recorded calls."""

    mode: str
    matched: tuple[MatchedCall, ...]
    remaining: tuple[str, ...]
