"""What an opaque id looks like, by a deterministic shape rule (issue 28; NEWCOMER findings 4 and 10).

A string is read as *tokens* (maximal runs of letters, digits, ``_`` and ``-``) and the separators between
them. A token is an *opaque id* (:func:`is_opaque_id`) when it

- holds a UUID (8-4-4-4-12 hex digits, any version: ``lc_run--<uuid>-0``, ``run-<uuid>``), or
- is a ULID (26 Crockford base-32 characters, the first one 0 to 7), or
- ends in a *body* (after its last ``_`` or ``-``) of 12 to 72 hex digits of one case holding a letter (a
  digest, a span id, a uuid without hyphens; never a number), or
- is a known id prefix (the rules data's ``[ids] prefixes``: ``chatcmpl-``, ``call_``, ``toolu_``...)
  followed by a body of 8 to 72 letters and digits holding a digit or an upper-case letter
  (``call_kzTNxAq5ycLEZUNVeRMnbE4B``; never ``call_weatherforecastlookup`` nor ``call_weather_1``).

No rule asks whether a value *looks random enough*: whether a token is an id depends on its characters'
classes and lengths only, so the same value always gets the same answer. The shape decides which values
pair into the renaming inside a dependency's output and which ids a recording handed out; whether an id
outside a dependency output may be renamed is decided by where it came from (:mod:`~stepfork.replay.noise.
origins`): minted by the run (``stepfork.trace.minting``), or a UUID whose version field says it was
made from randomness or a clock (:func:`fresh_by_shape`: versions 1, 4, 6 and 7 and ULIDs; never the
name-based versions 3 and 5, which are digests).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?")
"""A token: letters, digits, ``_`` and ``-``, starting and ending with a letter or digit."""

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
FRESH_VERSIONS = frozenset("1467")
"""UUID versions made from randomness or a clock (RFC 9562): 1 and 6 (time), 4 (random), 7 (time and
random). Versions 3 and 5 are digests of a name, 8 is free-form: never fresh by shape."""
MIN_BODY = 8
MAX_BODY = 72
HEX_BODY = 12
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
MAX_TOKEN = 128


@lru_cache(maxsize=1)
def known_prefixes() -> frozenset[str]:
    """The known id prefixes (``call_``, ``toolu_``...: the shipped rules data's ``[ids] prefixes``),
    lower case."""
    from stepfork.replay.noise.data import shipped

    return frozenset(str(p).lower() for p in shipped()["ids"]["prefixes"])


# the start of a run of 8+ letters and digits that holds a digit or an upper-case letter, or of 12 hex letters
_CANDIDATE = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]{8})(?:[a-z]*[0-9A-Z]|[a-f]{12}|[A-F]{12})")


def may_hold_id(text: str) -> bool:
    """False when ``text`` surely holds no opaque id (no run of 8 letters and digits with a digit or an
    upper-case letter, nor of 12 hex letters): the cheap test before :func:`split`."""
    return _CANDIDATE.search(text) is not None


@lru_cache(maxsize=1 << 16)
def is_opaque_id(token: str) -> bool:
    """True when ``token`` (one :data:`TOKEN`) has an opaque id's shape (module docstring)."""
    if len(token) > MAX_TOKEN:
        return False
    if UUID.search(token) is not None or ULID.fullmatch(token) is not None:
        return True
    cut = max(token.rfind("_"), token.rfind("-")) + 1
    prefix, body = token[:cut], token[cut:]
    size = len(body)
    if size < MIN_BODY or size > MAX_BODY or not body.isascii() or not body.isalnum():
        return False
    if size >= HEX_BODY and not body.isdigit() and _HEX.fullmatch(body) is not None:
        return True  # hex digits and a letter: a digest, a span id, a uuid without hyphens
    if prefix.lower() in known_prefixes():
        return not (body.isalpha() and body.islower())  # call_weatherforecastlookup is a name
    return False


def fresh_by_shape(token: str) -> bool:
    """True when ``token`` holds a UUID of a random or time-based version (:data:`FRESH_VERSIONS`, the
    RFC 4122 variant) or is a ULID: made anew on every run, by its own structure."""
    for found in UUID.finditer(token):
        text = found.group()
        if text[14] in FRESH_VERSIONS and text[19] in "89abAB":
            return True
    return ULID.fullmatch(token) is not None


_HEX_FOLDED = re.compile(r"[0-9a-f]{12,}")


def hex_fold(text: str) -> str | None:
    """``text`` lower-cased without ``-`` when that leaves 12 or more hex digits (a uuid, dashed or not;
    a hex id upper-cased), else None: the one spelling two ways of writing one hex id share (NEWCOMER5
    F4: an id a tool handed out and the agent passed on re-spelled is still that id)."""
    folded = text.lower().replace("-", "")
    return folded if _HEX_FOLDED.fullmatch(folded) else None


_UUID_EPOCH_NS = 12_219_292_800 * 10**9  # from 1582-10-15 (UUID versions 1 and 6) to 1970-01-01, in ns
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def shape_times(token: str) -> list[int | None]:
    """For each value of ``token`` that is fresh by its shape (:func:`fresh_by_shape`), the instant it
    says it was made (nanoseconds since the epoch: a UUID of version 1, 6 or 7, a ULID), or None (a
    random UUID, version 4, says nothing). RFC 9562 sections 5.1, 5.6, 5.7; the ULID spec."""
    found: list[int | None] = []
    for match in UUID.finditer(token):
        text = match.group().lower()
        version = text[14]
        if version not in FRESH_VERSIONS or text[19] not in "89ab":
            continue
        digits = text.replace("-", "")
        if version == "7":
            found.append(int(digits[:12], 16) * 10**6)
        elif version == "1":
            ticks = int(digits[13:16] + digits[8:12] + digits[:8], 16)  # time_hi, time_mid, time_low
            found.append(ticks * 100 - _UUID_EPOCH_NS)
        elif version == "6":
            ticks = int(digits[:12] + digits[13:16], 16)
            found.append(ticks * 100 - _UUID_EPOCH_NS)
        else:
            found.append(None)
    if not found and ULID.fullmatch(token) is not None:
        millis = 0
        for char in token[:10].upper():
            millis = millis * 32 + _CROCKFORD.index(char)
        found.append(millis * 10**6)
    return found


def tokens(text: str) -> Iterator[str]:
    """Every token of ``text``, in order."""
    for found in TOKEN.finditer(text):
        yield found.group()


def id_tokens(text: str) -> Iterator[str]:
    """The opaque ids among the tokens of ``text``, in order."""
    for found in TOKEN.finditer(text):
        token = found.group()
        if is_opaque_id(token):
            yield token


def split(text: str) -> tuple[list[str], list[str]]:
    """``(separators, tokens)`` of ``text``: ``text == seps[0] + toks[0] + seps[1] + ... + seps[-1]``
    (one more separator than tokens, each possibly empty)."""
    separators: list[str] = []
    found: list[str] = []
    last = 0
    for match in TOKEN.finditer(text):
        separators.append(text[last : match.start()])
        found.append(match.group())
        last = match.end()
    separators.append(text[last:])
    return separators, found


def embedded_uuids(token: str) -> list[str]:
    """The UUIDs inside ``token`` (lower-cased), as written (``lc_run--<uuid>-0`` holds one)."""
    return [m.group().lower() for m in UUID.finditer(token)]
