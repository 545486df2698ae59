"""Timing values: a clock reading or a measured duration, by key name and by shape (issue 28).

A difference is timing noise when its key is timing-named (the rules data's ``[timing] keys``: ``created``,
``*_at``, ``timestamp``, ``date``, ``duration``, ``*_ms``...) and each side that is present is a clock or
duration *shape* (or null): an ISO 8601 datetime with a time of day, an HTTP date (``Tue, 01 Dec 2026
12:00:00 GMT``), an ISO 8601 duration (``PT0.0013S``), a tagged ``datetime``/``time``/``timedelta``, an epoch
number (seconds 1e9..1e10 or milliseconds 1e12..1e13), or, under a duration-named key (``[timing]
duration_keys``: ``duration``, ``*_ms``, ``latency``...), any non-negative number or numeric string. A date
alone (``2026-01-05``) is not a clock: a booking date is behaviour.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from stepfork.replay.noise.ids import MAX_TOKEN

TAG = "$stepfork"
_ISO_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?", re.IGNORECASE
)
_HTTP_DATE = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} "
    r"\d{2}:\d{2}:\d{2} GMT"
)
_ISO_DURATION = re.compile(
    r"-?P(?=\d|T\d)(?:\d+Y)?(?:\d+M)?(?:\d+W)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:[.,]\d+)?S)?)?"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:ms|s)?")
_CLOCK_TAGS = frozenset({"datetime", "time", "timedelta"})


def is_iso_datetime(text: str) -> bool:
    """True for an ISO 8601 datetime with a time of day that is a real date (not ``2024-13-45T10:00``)."""
    if len(text) > 40 or _ISO_DATETIME.fullmatch(text) is None:
        return False
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00").replace(",", "."))
    except ValueError:  # digits in the right places but not a date (2024-13-45)
        return False
    return True


def is_clock(value: Any) -> bool:
    """True for a clock or duration shape that is not a bare number: an ISO datetime with a time of day,
    an HTTP date, an ISO 8601 duration, or a tagged datetime/time/timedelta."""
    if isinstance(value, str):
        if len(value) > MAX_TOKEN:
            return False
        return bool(is_iso_datetime(value) or _HTTP_DATE.fullmatch(value) or _ISO_DURATION.fullmatch(value))
    if isinstance(value, dict):
        return value.get(TAG) in _CLOCK_TAGS and "value" in value
    return False


def is_epoch(value: Any) -> bool:
    """True for a number that reads as a time since 1970: seconds in [1e9, 1e10) (2001 to 2286) or
    milliseconds in [1e12, 1e13)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 1e9 <= value < 1e10 or 1e12 <= value < 1e13


def is_duration_number(value: Any) -> bool:
    """True for a non-negative number, or a string of one (``"412"``, ``"0.25s"``: a header's form)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value >= 0
    return isinstance(value, str) and len(value) < 32 and _NUMBER.fullmatch(value) is not None


def timing_shaped(value: Any, *, duration_key: bool) -> bool:
    """True when ``value`` is a timing value (module docstring); null counts (a clock not set yet)."""
    if value is None or is_clock(value) or is_epoch(value):
        return True
    return duration_key and is_duration_number(value)
