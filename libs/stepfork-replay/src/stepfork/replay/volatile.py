"""Recognising a divergence on a value made anew at every run (a random id, a clock reading).

A tool input holding ``uuid4()`` or ``datetime.now().isoformat()`` diverges at every replay; ``--ignore
TOOL:PATH`` (:mod:`stepfork.replay.ignoring`) accepts such a path, and the mismatch message says so when
both the recorded and the live value have the same volatile shape: two UUIDs, two hex ids of one length
(after one shared non-hex prefix such as ``req_``), or two ISO 8601 timestamps with a time of day written
alike (the UUID and ISO datetime shapes are the noise model's: stepfork.replay.noise). Ordinary strings
never get the hint (the rule must stay precise: a wrong hint teaches users to ignore real regressions).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from stepfork.replay.noise.ids import UUID as _UUID
from stepfork.replay.noise.timing import is_iso_datetime

# a hex id: 16+ hex digits (span ids, trace ids, digests) after an optional prefix of letters and _ or -
# ending in a separator, so an English word is never read as a prefix of hex letters
_HEX_ID = re.compile(r"((?:[A-Za-z]+[_-])*)([0-9a-fA-F]{16,})")


def _hex_shape(text: str) -> tuple[str, int] | None:
    found = _HEX_ID.fullmatch(text)
    if found is None or not any(c.isdigit() for c in found.group(2)):
        return None
    return found.group(1), len(found.group(2))


def _timestamp_shape(text: str) -> str | None:
    if not is_iso_datetime(text):
        return None
    return re.sub(r"\d", "0", text)


def looks_volatile(expected: Any, actual: Any) -> bool:
    """True when ``expected`` and ``actual`` are two different strings of one volatile shape: both UUIDs
    (any version, any letter case), both hex ids with the same prefix and number of hex digits (16 or more,
    at least one a digit), or both ISO 8601 timestamps with a time of day and the same layout (digits in
    the same places, the same separator, precision and zone form), or two strings equal but for such
    timestamps inside them (``Current time: 2026-12-06T05:39:14Z`` in a prompt). Any other pair (numbers,
    ordinary strings, a UUID against a timestamp, equal strings) gives False."""
    if not isinstance(expected, str) or not isinstance(actual, str) or expected == actual:
        return False
    if _UUID.fullmatch(expected) and _UUID.fullmatch(actual):
        return True
    hex_shape = _hex_shape(expected)
    if hex_shape is not None and hex_shape == _hex_shape(actual):
        return True
    stamp = _timestamp_shape(expected)
    if stamp is not None and stamp == _timestamp_shape(actual):
        return True
    return _embedded_stamps(expected) == _embedded_stamps(actual) is not None


_STAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?"
)


def _embedded_stamps(text: str) -> str | None:
    """``text`` with each ISO 8601 timestamp inside it written as its layout (digits as 0), or None when
    it holds none: a clock in a prompt (``Current time: 2026-12-06T05:39:14Z``)."""
    found = False

    def layout(match: re.Match[str]) -> str:
        nonlocal found
        if not is_iso_datetime(match.group()):
            return match.group()
        found = True
        return re.sub(r"\d", "0", match.group())

    shaped = _STAMP.sub(layout, text)
    return shaped if found else None


def volatile_hint(label: str, path: str) -> str:
    """The hint for a divergence at ``path`` (``$.request_id``) of the call labelled ``label`` (a tool
    name, or an LLM's ``provider/model``: the key ``--ignore`` takes) whose values look volatile:
    ``if this value is random or a clock, ignore it: --ignore 'search:$.request_id'`` (shell-quoted)."""
    return f"if this value is random or a clock, ignore it: --ignore {shlex.quote(f'{label}:{path}')}"
