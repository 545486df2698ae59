"""The plain-JSON fast path of :func:`stepfork.trace.jsonable.to_jsonable`: prove a value needs no tag.

Most payloads are already plain JSON (exact dict/list/str/int/float/bool/None, finite floats, str keys).
:func:`scan_plain` proves that level by level with C-level primitives instead of walking value by value,
and encodes the value once with orjson; the facts it finds (:class:`PlainFacts`: the sorted bytes, the
dict keys, whether a float is in orjson's risky band) are kept per thread so that the recorder and replay
reuse them (:func:`take_plain_facts`) for redaction and canonical bytes (DESIGN.md "Data flow": one walk;
docs/performance.md "One scan instead of the tagging walk").

This module owns the two limits the tagging walk shares with the scan: the tag key :data:`TAG` and the
nesting limit :data:`MAX_DEPTH` (both re-exported by :mod:`stepfork.trace.jsonable`, their documented home).
"""

from __future__ import annotations

import gc
import itertools
import math
import operator
import threading
from typing import Any, Final

import orjson

from stepfork.trace._textsearch import TextSearch
from stepfork.trace.canonical import orjson_may_differ

__all__ = ["MAX_DEPTH", "TAG", "PlainFacts", "holds_tag", "remember_plain", "scan_plain", "take_plain_facts"]

TAG: Final = "$stepfork"
"""The key that marks a tagged form ``{"$stepfork": KIND, "value": ...}`` (docs/values.md)."""
MAX_DEPTH: Final = 128
"""Deepest Python nesting to_jsonable accepts. A tag adds up to 3 JSON levels (the dict pairs form), so
128 keeps every converted value under canonical.MAX_JSON_DEPTH (512) with room for the event around it."""

_PLAIN_TYPES: Final = frozenset({dict, list, str, int, float, bool, type(None)})
_MAX_SCAN: Final = 1 << 20  # references visited before giving up (a DAG sharing a list blows up)
_last_facts = threading.local()
_TAG_KEY: Final = f'"{TAG}":'.encode()


def holds_tag(encoded: bytes) -> bool:
    """True when the JSON text ``encoded`` holds a ``"$stepfork":`` key (a tagged form; a quote inside a
    string is escaped, so only a key matches).

    Looks for a ``$`` first: a one-byte search runs at memchr speed, about 15 times faster than the
    12-byte one over a 1.6 KB payload, and JSON without a tag rarely holds a ``$`` at all.
    """
    return b"$" in encoded and _TAG_KEY in encoded


class PlainFacts:
    """What one scan of a plain-JSON value found.

    Attributes:
        risky_floats: orjson's text may hold a float written otherwise than the canonical rule (a non-zero
            float with ``|x| < 1e-4`` prints ``0.00001`` or ``1e-7``, canonical.py); False proves
            ``encoded`` to be the canonical bytes. Found in the text (``canonical.orjson_may_differ``), so
            a string holding such text may make it True for nothing (the exact rule then runs).
        encoded: ``orjson.dumps(value, option=OPT_SORT_KEYS)``; the canonical bytes when not
            ``risky_floats``.
        keys: its distinct dict keys (all ``str``), collected on first access (replay never needs them).
    """

    __slots__ = ("_keys", "_levels", "encoded", "risky_floats")

    def __init__(self, levels: list[tuple[list[Any], set[type]]], risky_floats: bool, encoded: bytes) -> None:
        self._levels = levels  # the nesting levels holding a dict, with their types
        self._keys: set[str] | None = None
        self.risky_floats = risky_floats
        self.encoded = encoded

    @property
    def keys(self) -> set[str]:
        """The distinct keys of every dict in the value."""
        if self._keys is None:
            keys: set[str] = set()
            for level, types in self._levels:
                keys.update(*_of_type(level, types, dict))  # iterating a dict gives its keys
            self._keys = keys
        return self._keys


def _of_type(level: list[Any], types: set[type], wanted: type) -> Any:
    if len(types) == 1:
        return level
    if len(level) <= 32:  # a comprehension is cheaper than setting up the C pipeline below
        return [x for x in level if type(x) is wanted]
    return list(itertools.compress(level, map(operator.is_, map(type, level), itertools.repeat(wanted))))


def _all_finite(levels: list[tuple[list[Any], set[type]]]) -> bool:
    """True when every float of these nesting levels is finite (C-level loops: a sum, else each float)."""
    for level, types in levels:
        floats = _of_type(level, types, float)
        total = sum(floats)
        if total - total != 0.0 and not all(map(math.isfinite, floats)):  # NaN or infinite (or overflow)
            return False
    return True


# orjson writes NaN and infinities as null, and floats of the risky band as below (canonical.py): a text
# with none of these holds neither. One C-speed search (stepfork.trace._textsearch) decides the common case.
_FLOAT_SCREEN: Final = TextSearch(
    r"0\.0000|e-[0-9](?:[^0-9]|$)|null", rb"0\.0000|e-\d(?!\d)|null", "[1e-7,2]", '[1e-17,0.0001,"nul"]'
)


def scan_plain(value: Any) -> PlainFacts | None:
    """Facts about ``value`` when to_jsonable would return it unchanged, else None (use the walk).

    Args:
        value: any Python value; only an exact ``dict`` or ``list`` can be proved plain.

    Returns:
        PlainFacts, or None when ``value`` is not provably plain JSON (the tagging walk then decides, and
        reports a cycle, ``too_deep`` or an unsupported type). Never raises.

    Breadth-first over the nesting levels with C-level primitives (``gc.get_referents`` yields the
    items of lists and the values of dicts; ``map(type)``, ``set``) so the Python cost is per level, not
    per value. Sound: every object is checked to be an exact JSON type; no container at depth
    ``MAX_DEPTH`` (to_jsonable's ``too_deep``); orjson must encode the value, which it refuses for
    non-str keys, lone surrogates (keys and strings) and ints beyond 64 bits (those take the walk);
    ``"$stepfork":`` must not occur in the encoding (no such key); and floats must be finite: orjson writes
    NaN and infinities as ``null``, so a text without ``null`` has none, and only a text with one has its
    floats checked. A cycle never ends the levels, so it hits the depth or size cap and the walk reports it.
    """
    if type(value) is not dict and type(value) is not list:
        return None
    # Encoded first: orjson refuses most values that are not plain JSON at once, and it reads the value
    # from memory, so the scan below runs on cached objects (a payload's first pass costs twice its next).
    try:
        encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return None
    level: list[Any] = [value]
    dict_levels: list[tuple[list[Any], set[type]]] = []
    float_levels: list[tuple[list[Any], set[type]]] = []
    seen = 0
    for depth in range(MAX_DEPTH + 1):
        types = set(map(type, level))
        if not types <= _PLAIN_TYPES:
            return None
        if float in types:
            float_levels.append((level, types))
        if dict in types:
            dict_levels.append((level, types))
        elif list not in types:
            break  # only scalars: the value ends here
        if depth == MAX_DEPTH:
            return None  # a container at MAX_DEPTH: the walk raises too_deep (or a cycle)
        level = gc.get_referents(*level)
        seen += len(level)
        if seen > _MAX_SCAN:
            return None
    if holds_tag(encoded):
        return None  # a "$stepfork" key: the pairs form (a quote in a string is escaped, never this)
    risky = False
    if float_levels and _FLOAT_SCREEN(encoded):
        if b"null" in encoded and not _all_finite(float_levels):
            return None  # NaN or infinite: tagged by the walk
        risky = orjson_may_differ(encoded)
    return PlainFacts(dict_levels, risky, encoded)


def holds_float_beyond(value: Any, limit: float) -> bool:
    """True when ``value`` (any JSON value) holds a float that is NaN, infinite or of magnitude ``limit``
    or more. Level by level with C primitives, as :func:`scan_plain` (about 1.3 us for a 1.6 KB chat
    completion): the HTTP capture's test for floats orjson would not write back exactly (``null`` for NaN,
    an integer past 64 bits that orjson read as a float; stepfork.integrations._http_json)."""
    level: list[Any] = [value]
    while level:
        types = set(map(type, level))
        if float in types:
            for x in level:
                if type(x) is float and not -limit < x < limit:  # NaN too: every comparison is False
                    return True
        if dict not in types and list not in types:
            return False
        level = gc.get_referents(*level)  # the items of lists, the values of dicts
    return False


def remember_plain(value: Any) -> bool:
    """Scan ``value`` (:func:`scan_plain`); when it is plain JSON keep its facts for this thread's next
    :func:`take_plain_facts` and return True, else return False (nothing kept). Never raises."""
    facts = scan_plain(value)
    if facts is None:
        return False
    _last_facts.entry = (value, facts)
    return True


def take_plain_facts(value: Any, *, rescan: bool = True) -> PlainFacts | None:
    """The facts of this thread's last ``to_jsonable`` call when it returned ``value`` itself (plain
    JSON), consumed; else a fresh scan of ``value`` (None when it is not plain JSON), or None without
    scanning when ``rescan`` is False.

    Lets the recorder and replay reuse the boundary's scan (DESIGN.md "Data flow": one walk) for
    redaction (the dict keys) and canonical bytes (``encoded``) without walking or encoding again.
    Never raises.
    """
    last = getattr(_last_facts, "entry", None)
    if last is not None:
        _last_facts.entry = None
        if last[0] is value:
            facts: PlainFacts = last[1]
            return facts
    return scan_plain(value) if rescan else None
