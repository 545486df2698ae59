"""What a replay reports about the calls it served: MatchedCall, ExecutedCall, ReplayDecision, ReplaySummary
(spec replay.txt "Trajectory assertions", hybrid-replay.txt; interop/REFERENCE-API.md "Frozen dataclasses").
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from stepfork.replay.matching import LiveInput
from stepfork.replay.plan import RecordedCall
from stepfork.trace.models import EventStatus


@dataclass(frozen=True, slots=True)
class MatchedCall:
    """A recorded call the replay consumed: ``index`` (0-based, visible calls), kind, label, and
    ``action`` ``"substituted"`` (recorded response served) or ``"executed"`` (body ran), and ``match``
    ``"full"`` or ``"partial"`` (a call imported with part of its request: only those fields were compared;
    stepfork.replay.imported)."""

    index: int
    kind: str
    label: str
    action: str
    match: str = "full"


class ExecutedCall:
    """A call the replay reached and consumed (spec: ``replay.executed_calls``). Immutable.

    Attributes:
        index, kind, label, action: as :class:`MatchedCall`.
        input: the redacted live input (JSON), redacted on first access.
        status: the recorded :class:`EventStatus` when substituted (``error`` for a recorded failure);
            None when the body executed, because the recorded status does not describe the new response.
        step: ``step`` of the recorded call event.
        match: ``"full"``, or ``"partial"`` when only the request fields an imported call holds were
            compared (stepfork.replay.imported).
    """

    __slots__ = ("_input", "action", "index", "kind", "label", "match", "status", "step")

    index: int
    kind: str
    label: str
    status: EventStatus | None
    action: str
    step: int
    match: str
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
        match: str = "full",
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
            ("match", match),
        ):
            set_(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ExecutedCall is immutable (cannot set {name!r})")

    @property
    def input(self) -> Any:
        """The redacted live input (JSON)."""
        value = self._input
        return value.value if isinstance(value, (LiveInput, _RecordedInput)) else value

    def _key(self) -> tuple[Any, ...]:
        return (
            self.index,
            self.kind,
            self.label,
            self.input,
            self.status,
            self.action,
            self.step,
            self.match,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExecutedCall) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ExecutedCall(index={self.index}, kind={self.kind!r}, label={self.label!r}, "
            f"input={self.input!r}, status={self.status!r}, action={self.action!r}, step={self.step}"
            + (f", match={self.match!r})" if self.match != "full" else ")")
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


class _RecordedInput:
    """The input of a call whose redacted live input equals the recorded one (same canonical JSON): a
    copy of the recorded input, made on first read, stands for it (the caller may change it freely)."""

    __slots__ = ("_recorded", "_value")

    def __init__(self, recorded: Any) -> None:
        self._recorded = recorded
        self._value: Any = _UNSET

    @property
    def value(self) -> Any:
        if self._value is _UNSET:
            self._value = copy.deepcopy(self._recorded)
        return self._value


_UNSET: Any = object()


class ServedCalls:
    """The calls a session consumed, in order; their MatchedCall/ExecutedCall records are built on read.

    A consumed call costs three list appends of objects that already exist (the recorded call, the
    :class:`LiveInput` or None, the action): building two records and an ``EventStatus`` per call was about a
    tenth of a replayed call's cost, and each record was one more long-lived object for the cyclic GC to
    walk (docs/performance.md, "Replay"). The records are built once, on the first read that needs them,
    and kept, so every read returns the same objects. Not thread-safe on its own: the session serializes
    :meth:`add` and the reads.

    A call whose live input matched the recorded one exactly keeps no live input at all (``None``): its
    redacted live input *is* the recorded input (equal canonical JSON), and a replay session then holds no
    memory per call beyond the records' own (keeping every live request body alive made each replayed
    call allocate fresh memory instead of reusing the block just freed; docs/performance.md).
    """

    __slots__ = ("_actions", "_calls", "_executed", "_inputs", "_matched", "_partial")

    def __init__(self) -> None:
        self._calls: list[RecordedCall] = []
        self._inputs: list[LiveInput | None] = []
        self._actions: list[str] = []
        self._matched: list[MatchedCall] = []
        self._executed: list[ExecutedCall] = []
        self._partial: set[int] = set()  # positions matched on partial input (imported calls)

    def add(
        self,
        expected: RecordedCall,
        live: LiveInput,
        action: str,
        match: str = "full",
        *,
        same_input: bool = False,
    ) -> None:
        """Record that ``expected`` was consumed by a live call with input ``live``; ``action`` is
        ``"executed"`` (the body ran) or ``"substituted"`` (the recorded outcome was served).
        ``same_input``: the redacted live input equals the recorded input (the full comparison passed
        with nothing ignored); then ``live`` is not kept and the record reports the recorded input.

        Only ``live.value`` is read from now on, so its cached bytes are released (recomputed on demand).
        """
        if match != "full":
            self._partial.add(len(self._calls))
        self._calls.append(expected)
        if same_input and match == "full":
            self._inputs.append(None)
        else:
            live.release_bytes()
            self._inputs.append(live)
        self._actions.append(action)

    def __len__(self) -> int:
        return len(self._calls)

    def last_index(self) -> int | None:
        """The recorded index of the last call served, or None before the first."""
        return self._calls[-1].index if self._calls else None

    def _build(self) -> None:
        """Build the records of the calls added since the last read."""
        for position in range(len(self._matched), len(self._calls)):
            expected, action = self._calls[position], self._actions[position]
            executed = action == "executed"
            match = "partial" if position in self._partial else "full"
            self._matched.append(MatchedCall(expected.index, expected.kind, expected.label, action, match))
            self._executed.append(
                ExecutedCall(
                    expected.index,
                    expected.kind,
                    expected.label,
                    self._inputs[position] or _RecordedInput(expected.input),
                    None if executed else EventStatus(expected.status),
                    action,
                    expected.step,
                    match,
                )
            )

    def matched(self) -> list[MatchedCall]:
        """The :class:`MatchedCall` of every consumed call, in order (the cached list: copy it)."""
        self._build()
        return self._matched

    def executed(self) -> list[ExecutedCall]:
        """The :class:`ExecutedCall` of every consumed call, in order (the cached list: copy it)."""
        self._build()
        return self._executed
