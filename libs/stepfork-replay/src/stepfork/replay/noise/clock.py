"""Clock readings, recognised by the window of the run that read them (NEWCOMER2 finding 7; NEWCOMER3 F7).

An agent that makes an id from the clock (``f"req-{time.time_ns()}"``, ``str(int(time.time() * 1000))``)
makes another one on every run, as it does with ``uuid4()``: a uuid of version 1, 6 or 7 and a ULID, made
from a clock too, are already fresh by their structure (:func:`stepfork.replay.noise.ids.fresh_by_shape`). A
run's clock readings fall inside the run: a string's run of 10, 13, 16 or 19 digits (an epoch time in
seconds, milliseconds, microseconds or nanoseconds; ``time.time()``'s fraction included) whose time lies in
the run's window (its first to its last event, :data:`SLACK` either side; a replay's, from its start to now)
is a *clock span*, a value the run made anew, as a minted span is (:mod:`stepfork.trace.minting`). So is
an ISO 8601 datetime with seconds (``datetime.now().isoformat()``, ``2026-12-06T13:22:52.328563+00:00``,
``2026-12-06 13:22:52``; in the basic format too, ``20261206T132252Z``, ``20261206T132252+0100``) whose
instant lies in the window: one with an offset (``Z``, ``+01:00``) is that
instant; a naive one is read as UTC, as this process's local time (``datetime.now()``,
``datetime.utcnow()``) and, for a recording whose ``minted.json`` states it, as the recording process's
local time (a laptop's recording compared in CI), a clock span when any lies in the window. A clock span is
renamed only where it is one on both sides and was not handed out (a tool's ``created`` time the agent
copies must match exactly); a number of another length, a date, a datetime without seconds, a time outside
the run (a deadline, a meeting) and a clock reading taken before the run began are compared as any value.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

SLACK = 2_000_000_000
"""Nanoseconds a clock reading may lie before the run's first event or after its last (the recorder's own
clock reads bracket the agent's; 2 s)."""
_DIGITS = re.compile(r"[0-9]{10}")
_EPOCH = re.compile(r"(?<![0-9])(?:[0-9]{19}|[0-9]{16}|[0-9]{13}|[0-9]{10})(?:\.[0-9]{1,9})?(?![0-9])")
_SCALE = {10: 10**9, 13: 10**6, 16: 10**3, 19: 1}
_ISO = re.compile(
    r"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})?(?![0-9])",
    re.IGNORECASE,
)
_ISO_BASIC = re.compile(
    r"(?<![0-9])([0-9]{4})([0-9]{2})([0-9]{2})T([0-9]{2})([0-9]{2})([0-9]{2})(?:[.,]([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})?(?![0-9])",
    re.IGNORECASE,
)
"""ISO 8601 basic format with seconds: ``20261206T160041Z``, ``20261206T160041+0100``
(``strftime("%Y%m%dT%H%M%SZ")``); the same groups as :data:`_ISO`."""


class ClockWindow:
    """A run's window on the clock, finding its clock spans in text (a ``Spans`` finder, as
    :class:`stepfork.trace.minting.MintLog`).

    Args:
        start: the run's first instant (nanoseconds since the epoch), or a callable giving
            ``(start, end)`` on first use (a recording's, read from its events only when a string holds
            digits).
        end: its last instant; None: now, at each question (a replay still running).
    """

    def __init__(
        self,
        start: int | Callable[[], tuple[int, int]],
        end: int | None = None,
        *,
        utc_offset: int | None = None,
    ) -> None:
        self._bounds = start if callable(start) else None
        self._start: int = 0 if callable(start) else start
        self._end = end
        self._offset = utc_offset

    @classmethod
    def of_trace(cls, trace: Any) -> ClockWindow:
        """The window of a recorded run: from its first to its last event's timestamp; its naive readings
        are read in the recording process's time zone too when ``minted.json`` states it
        (``utc_offset``)."""
        from stepfork.trace.minting import minted_of

        def bounds() -> tuple[int, int]:
            stamps = [_ns(getattr(event, "timestamp", None)) for event in trace.events]
            found = [s for s in stamps if s is not None]
            return (min(found), max(found)) if found else (0, 0)  # no time: no reading falls in it

        return cls(bounds, utc_offset=getattr(minted_of(trace), "utc_offset", None))

    def _window(self) -> tuple[int, int]:
        if self._bounds is not None:
            self._start, self._end = self._bounds()
            self._bounds = None
        end = self._end if self._end is not None else time.time_ns()
        return self._start - SLACK, end + SLACK

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each clock span of ``text`` (module docstring), left to right."""
        found: list[tuple[int, int]] = []
        for start, end, instants, is_epoch in _readings(text, self._offset):
            # an ISO reading overlapping an epoch one (its digits) is that one
            if self._in_window(instants) and (is_epoch or not any(start < e and s < end for s, e in found)):
                found.append((start, end))
        return sorted(found)

    def holds(self, instant: int) -> bool:
        """True when ``instant`` (nanoseconds since the epoch) lies in the window (its slack included)."""
        low, high = self._window()
        return low <= instant <= high

    def _in_window(self, instants: list[int]) -> bool:
        if not instants:
            return False
        low, high = self._window()
        return any(low <= instant <= high for instant in instants)


def instants_in(text: str) -> set[int]:
    """The instants (nanoseconds since the epoch) the clock readings of ``text`` say, in any window: an
    epoch time of 10, 13, 16 or 19 digits (its fraction included: ``time.time()``'s reading is not the
    second it falls in), an ISO 8601 datetime with seconds (its own
    instant with an offset; as UTC without one). Two spellings of one reading say the same instant: a
    tool's ``...Z`` passed on as ``+00:00``, its seconds passed on as milliseconds (NEWCOMER5 F4)."""
    return {instants[0] for _, _, instants, _ in _readings(text) if instants}


def to_the_second(text: str) -> bool:
    """True when the whole of ``text`` is one clock reading's shape to the whole second: an epoch time of
    10 digits without a fraction (``str(int(time.time()))``), or an ISO 8601 datetime with seconds and no
    fraction (``isoformat(timespec="seconds")``). Such a reading and a response's ``created`` second may be
    equal by chance; a finer one may not (NEWCOMER6 F2)."""
    if len(text) == 10:
        return text.isdigit()
    match = _ISO.fullmatch(text) or _ISO_BASIC.fullmatch(text)
    return match is not None and match.group(7) is None


def _readings(text: str, offset: int | None = None) -> list[tuple[int, int, list[int], bool]]:
    """``(start, end, instants, is_epoch)`` of each possible clock reading of ``text``, epoch times first:
    an epoch time's one instant (its fraction included, to the nanosecond); an ISO datetime's
    (:func:`_instants`, naive ones read in ``offset`` too). The cheap tests first: most strings hold
    neither."""
    found: list[tuple[int, int, list[int], bool]] = []
    if len(text) < 10:
        return found
    if _DIGITS.search(text) is not None:
        for match in _EPOCH.finditer(text):
            digits, _, fraction = match.group().partition(".")
            scale = _SCALE[len(digits)]
            # the fraction is part of the reading: time.time()'s 1796590123.34 is not the provider's
            # `created` second 1796590123 (NEWCOMER6 F2), while 1796590123.0 and 1796590123000 are
            instant = int(digits) * scale + (int(fraction) * scale // 10 ** len(fraction) if fraction else 0)
            found.append((match.start(), match.end(), [instant], True))
    matches: list[re.Match[str]] = []
    if len(text) >= 19 and ":" in text:
        matches.extend(_ISO.finditer(text))
    if len(text) >= 15 and ("T" in text or "t" in text):
        matches.extend(_ISO_BASIC.finditer(text))
    found.extend((m.start(), m.end(), _instants(m, offset), False) for m in matches)
    return found


def _instants(match: re.Match[str], recorded_offset: int | None = None) -> list[int]:
    """The instants (nanoseconds since the epoch) an ISO datetime match may mean: its own with an offset;
    without one, as UTC, as local time and as the recording's local time (``recorded_offset``, seconds
    east of UTC); none when it is no real date (``2026-13-45``)."""
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    nanos = int((fraction or "0").ljust(9, "0"))
    try:
        wall = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    except ValueError:
        return []
    if offset is not None:
        if offset.upper() == "Z":
            shift = 0
        else:
            digits = offset[1:].replace(":", "")
            shift = (int(digits[:2]) * 60 + int(digits[2:])) * 60 * (1 if offset[0] == "+" else -1)
        aware = [wall.replace(tzinfo=UTC) - timedelta(seconds=shift)]
    else:
        aware = [wall.replace(tzinfo=UTC)]
        with suppress(OverflowError, OSError, ValueError):
            aware.append(wall.astimezone(UTC))  # a naive datetime's astimezone reads it as local time
        if recorded_offset is not None:
            aware.append(wall.replace(tzinfo=UTC) - timedelta(seconds=recorded_offset))
    return [int(a.timestamp()) * 10**9 + nanos for a in aware]


def _ns(value: Any) -> int | None:
    if isinstance(value, datetime):
        return int(value.timestamp()) * 10**9 + value.microsecond * 1000
    return None


_RUN = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class ClockForm:
    """The form of one clock reading's text (:func:`clock_form`).

    Attributes:
        shape: the text with each run of digits replaced by its length (``2026-12-06T16:52:49`` ->
            ``4-2-2T2:2:2``); an ISO datetime's fraction left out (``isoformat()`` drops a zero one, and
            ``timespec`` varies it), an epoch's fraction kept as ``.F`` (``repr(time.time())`` always
            writes one, in 1 to 7 digits); an offset written by its form only (``Z``, ``+2:2``, ``+4``).
        offset: an aware ISO datetime's offset in seconds east of UTC; None for a naive one or an epoch.
    """

    shape: str
    offset: int | None


def clock_form(text: str) -> ClockForm | None:
    """The form of ``text`` when the whole of it is a clock reading's shape (an epoch time of 10, 13, 16 or
    19 digits with an optional ``.`` fraction; an ISO 8601 datetime with seconds, extended or basic), else
    None. Whether it lies in a run's window is :meth:`ClockWindow.spans`' to say."""
    if _EPOCH.fullmatch(text) is not None:
        whole, dot, _ = text.partition(".")
        return ClockForm(f"{len(whole)}{'.F' if dot else ''}", None)
    match = _ISO.fullmatch(text) or _ISO_BASIC.fullmatch(text)
    if match is None:
        return None
    end = match.start(7) - 1 if match.group(7) is not None else match.end(6)
    shape = _RUN.sub(lambda run: str(len(run.group())), text[:end])
    offset = match.group(8)
    if offset is None:
        return ClockForm(shape, None)
    if offset.upper() == "Z":
        return ClockForm(shape + offset, 0)
    digits = offset[1:].replace(":", "")
    seconds = (int(digits[:2]) * 60 + int(digits[2:])) * 60 * (1 if offset[0] == "+" else -1)
    return ClockForm(shape + "+" + _RUN.sub(lambda run: str(len(run.group())), offset[1:]), seconds)


def same_clock_forms(
    left: list[ClockForm | None],
    right: list[ClockForm | None],
    left_local: int | None = None,
    right_local: int | None = None,
) -> bool:
    """True when two tokens' clock spans (their forms, left to right) may be renamed into each other: as
    many on each side, each pair of one shape and, for aware times, of one offset. Two offsets that differ
    are the same form only where each is its own run's local offset (``left_local``, ``right_local``:
    seconds east of UTC; None: unknown): ``datetime.now().astimezone()`` on a laptop in one zone and in CI
    in another is the same code. A naive reading is its own form (docs/decisions.md)."""
    if len(left) != len(right):
        return False
    for a, b in zip(left, right, strict=True):
        if a == b:
            continue
        if a is None or b is None or a.shape != b.shape:
            return False
        if left_local is None or (a.offset, b.offset) != (left_local, right_local):
            return False
    return True


def clock_forms(text: str, made: Any, minted: Any) -> list[ClockForm | None]:
    """The forms of ``text``'s clock spans on one side: the spans its ``made`` finder (minted and clock
    spans; None: none) finds that its ``minted`` finder (None: none) does not. A minted value is no
    clock reading: its pairing is left as it was."""
    spans: list[tuple[int, int]] = made.spans(text) if made is not None else []
    if not spans:
        return []
    taken: list[tuple[int, int]] = minted.spans(text) if minted is not None else []
    return [
        clock_form(text[start:end])
        for start, end in spans
        if not any(start < high and low < end for low, high in taken)
    ]
