"""What an opaque id looks like: the token rule behind fresh ids and the renaming (issue 28).

A string is read as *tokens* (maximal runs of letters, digits, ``_`` and ``-``) and the separators between
them. A token is an opaque id when it holds a UUID (any version, with hyphens: ``lc_run--<uuid>-0``,
``run-<uuid>``), or when it is a short prefix of words (``chatcmpl-``, ``call_``, ``toolu_``, ``pyd_ai_``)
followed by a *body* of 8 to 72 letters and digits that is random-looking: 12 or more hex digits holding
both a digit and a letter (one case), or a body that holds a letter, changes character class (lower case,
upper case, digit) at least once every five characters, and holds a digit unless its prefix is a known id
prefix (the rules data's ``[ids] prefixes``). That takes in uuids without
hyphens, ULIDs, hex digests (docs/decisions.md) and provider ids (``chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG``,
``toolu_01A09q90qw90lq917835lq9``); never an ordinary word, a number, a date, or a readable id such as
``call_weather_1`` or ``msg_01``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?")
"""A token: letters, digits, ``_`` and ``-``, starting and ending with a letter or digit."""

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
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


_RUNS = re.compile(r"[a-z]+|[A-Z]+|[0-9]+")
# the start of a run of 8+ letters and digits that holds a digit or an upper-case letter
_CANDIDATE = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]{8})[a-z]*[0-9A-Z]")


def _switches(body: str) -> int:
    """How many times ``body`` changes character class (lower case, upper case, digit)."""
    return len(_RUNS.findall(body)) - 1


def may_hold_id(text: str) -> bool:
    """False when ``text`` surely holds no opaque id (no run of 8 letters and digits with a digit or an
    upper-case letter): the cheap test before :func:`split`."""
    return _CANDIDATE.search(text) is not None


@lru_cache(maxsize=1 << 16)
def is_opaque_id(token: str) -> bool:
    """True when ``token`` (one :data:`TOKEN`) looks like an opaque id (module docstring)."""
    if len(token) > MAX_TOKEN:
        return False
    if UUID.search(token) is not None:
        return True
    cut = max(token.rfind("_"), token.rfind("-")) + 1
    prefix, body = token[:cut], token[cut:]
    size = len(body)
    if size < MIN_BODY or size > MAX_BODY or not body.isascii() or not body.isalnum():
        return False
    letters = size - sum(1 for c in body if c.isdigit())
    if letters == 0:
        return False  # a number, a date
    if letters < size and size >= HEX_BODY and _HEX.fullmatch(body) is not None:
        return True  # hex digits and letters: a digest, a span id, a uuid without hyphens
    known = prefix.lower() in known_prefixes()
    if letters == size and not known:
        return False
    return _switches(body) * 5 >= size


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
