"""The text rules of :mod:`stepfork.trace.redaction`, compiled: what happens to one string, and the screen.

:class:`TextRules` is one immutable snapshot of the rules that apply inside strings (docs/redaction.md):
exact registered secrets (reason ``registered_secret``) and credential patterns (``credential_pattern``,
the defaults of :mod:`stepfork.trace._redaction_rules` plus the user's), each match becoming
``"[REDACTED]"``. It also screens a whole payload's JSON text in one pass against the patterns' needles
(one multi-literal search in pydantic-core's Rust regex), so the common case, no secret, skips the walk.
Key rules and the walk over JSON values stay in the redaction module; a ``Redactor`` swaps in a new
snapshot whenever a rule is added, so a redacting thread never sees half an update.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any, Final, Literal

from stepfork.trace._redaction_names import is_secret_name
from stepfork.trace._redaction_rules import PATTERNS, SCREEN_GROUPS, SCREEN_NEEDLES
from stepfork.trace._textsearch import TextSearch

__all__ = ["MIN_SECRET_LENGTH", "REPLACEMENT", "Reason", "TextRules", "check_secret"]

REPLACEMENT: Final = "[REDACTED]"
MIN_SECRET_LENGTH: Final = 4

Reason = Literal["sensitive_key", "credential_pattern", "registered_secret"]

# (the pattern, compiled or its source, and its needles or None)
_Patterns = tuple[tuple[re.Pattern[str] | str, tuple[str, ...] | None], ...]
_DEFAULT_PATTERNS: Final[_Patterns] = tuple((p, needles) for _, needles, p in PATTERNS)
"""The default credential patterns (``_redaction_rules.PATTERNS``), each with its needles; compiled when a
text first holds one of its needles (:func:`_compiled`), so that importing the rules compiles nothing."""


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source, re.ASCII)


_SHORT_TEXT: Final = 128  # texts up to this length (tool and model names, roles) have cached verdicts
_PLAIN_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")  # keys whose JSON text is the key itself (no escapes)


def _needle_search(needles: tuple[bytes, ...]) -> TextSearch | None:
    """ "Does the (lower-cased, UTF-8) text hold one of ``needles``": one search of the needles joined by
    ``|`` (:class:`stepfork.trace._textsearch.TextSearch`: pydantic-core's Rust regex searches a literal
    alternation with SIMD multi-literal search); None when a needle is not a plain literal.

    Measured (benchmarks/bench_recording.py payloads): 64 KB in about 25-40 us, where testing the ~35
    needles one ``in`` at a time takes about 1 ms and Python's ``re`` alternation 2 ms. The needles hold no
    regex metacharacter but ``.``, escaped (checked), so the pattern matches exactly when one of them occurs.
    """
    if not all(re.fullmatch(rb"[a-z0-9_=:/ .-]+", n) for n in needles):
        return None
    pattern = b"|".join(n.replace(b".", rb"\.") for n in needles)  # "sg.", "ya29.": a literal dot
    hit = f"x {needles[-1].decode()} y"
    return TextSearch(pattern.decode("ascii"), pattern, hit, "nothing to see")


def _searches() -> tuple[TextSearch, TextSearch] | None:
    """The screen's two searches, one per group of ``SCREEN_GROUPS`` (two cost less than one of all the
    needles: docs/performance.md), or None when one cannot be built (``in`` per needle then)."""
    first, second = (_needle_search(group) for group in SCREEN_GROUPS)
    return None if first is None or second is None else (first, second)


_NEEDLES: Final = _searches()


def check_secret(value: str) -> None:
    """Accept ``value`` as a registered secret or raise ValueError: it must be a str of at least
    MIN_SECRET_LENGTH (4) characters and not part of ``"[REDACTED]"`` (redacting would never end)."""
    if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH:
        raise ValueError(f"a registered secret must be a str of at least {MIN_SECRET_LENGTH} characters")
    if value in REPLACEMENT:
        raise ValueError("a registered secret cannot be part of the replacement text [REDACTED]")


def _span(match: re.Match[str]) -> tuple[int, int]:
    """The part of a pattern match to replace: its ``secret`` group when it took part, else all of it."""
    if "secret" in match.re.groupindex and match.start("secret") >= 0:
        return match.span("secret")
    return match.span()


def _matches(pattern: re.Pattern[str], text: str, default: bool) -> list[tuple[int, int]]:
    """The non-empty spans :func:`_span` of ``pattern`` in ``text``. A default pattern with a group named
    ``name`` (``named_assignment``) counts a match only when the key rule calls that name a secret
    (:func:`stepfork.trace._redaction_names.is_secret_name`): ``NAME=value`` in text is redacted when a
    string under the dict key ``NAME`` is (a user's pattern is never filtered)."""
    found: Iterable[re.Match[str]] = pattern.finditer(text)
    if default and "name" in pattern.groupindex:
        found = (m for m in found if m.start("name") < 0 or is_secret_name(m["name"]))
    return [span for span in map(_span, found) if span[0] < span[1]]


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each union of overlapping ``spans`` replaced by one REPLACEMENT."""
    spans.sort()
    parts: list[str] = []
    done = 0
    start, end = spans[0]
    for next_start, next_end in spans[1:]:
        if next_start < end:  # overlapping: one region
            end = max(end, next_end)
            continue
        parts += (text[done:start], REPLACEMENT)
        done = end
        start, end = next_start, next_end
    parts += (text[done:start], REPLACEMENT, text[end:])
    return "".join(parts)


class TextRules:
    """The string rules of one ``Redactor`` state, compiled; immutable but for a bounded verdict cache.

    Args:
        extra_patterns: the user's compiled patterns, after the defaults (a group named ``secret``
            limits the replacement). They have no needles, so with any of them the payload screen is off
            and every string is matched against every pattern.
        secrets: registered secret values, already checked with :func:`check_secret`.
    """

    __slots__ = (
        "_cache",
        "_key_cuts",
        "_patterns",
        "_screen",
        "_secret_blob_re",
        "_secret_re",
    )

    def __init__(self, extra_patterns: Iterable[re.Pattern[str]], secrets: Iterable[str]) -> None:
        extras = tuple((p, None) for p in extra_patterns)
        self._patterns: _Patterns = _DEFAULT_PATTERNS + extras
        self._screen: tuple[bytes, ...] | None = None if extras else SCREEN_NEEDLES
        # Longest first, so a secret that contains another is replaced whole.
        ordered = sorted(secrets, key=len, reverse=True)
        # A lookahead finds every occurrence, overlapping ones too (``abab`` twice in ``ababab``).
        alternatives = "|".join(map(re.escape, ordered))
        self._secret_re = re.compile(f"(?=({alternatives}))") if ordered else None
        # The same secrets as they appear inside JSON text (escaped), for the payload screen.
        escaped = [json.dumps(s, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass") for s in ordered]
        self._secret_blob_re = re.compile(b"|".join(map(re.escape, escaped))) if ordered else None
        # The cache belongs to these rules: a new rule set starts a new, empty cache.
        self._cache: dict[str, tuple[str, Reason | None]] = {}
        # key -> its ``"key":`` bytes when it holds a needle and is clean (cut before screening again),
        # b"" when it holds no needle, None when it holds one and cannot be cut (blob_may_match_values)
        self._key_cuts: dict[str, bytes | None] = {}

    def redact(self, text: str) -> tuple[str, Reason | None]:
        """``(new_text, reason)``: ``text`` with every registered secret and pattern match replaced, and
        ``registered_secret`` / ``credential_pattern`` (the first rule that changed it) or None when no
        rule matched (``new_text`` is then ``text``). Short texts are answered from the cache."""
        if len(text) > _SHORT_TEXT:
            return self._apply(text)
        cache = self._cache
        known = cache.get(text)
        if known is None:
            known = self._apply(text)
            if len(cache) > 10_000:  # bounded: texts are data
                cache.clear()
            cache[text] = known
        return known

    def _apply(self, text: str) -> tuple[str, Reason | None]:
        # Every rule is matched against the same text and the union of the matches is replaced at once:
        # replacing one rule's match first could cut another secret so that its rule no longer matches
        # and part of it stayed visible (a registered secret inside a JWT). A replacement can complete a
        # match across its edge, so this repeats until nothing changes (bounded: text is data).
        reason: Reason | None = None
        for _ in range(8):
            spans, registered = self._spans(text)
            if not spans:
                break
            new = _replace_spans(text, spans)
            if new == text:
                break
            text = new
            if registered:
                reason = "registered_secret"
            reason = reason or "credential_pattern"
        return text, reason

    def spans(self, text: str) -> tuple[list[tuple[int, int]], Reason | None]:
        """What :meth:`redact` replaces in one pass over ``text``: the ``(start, end)`` of every match of
        every rule (overlapping ones too, unsorted) and ``registered_secret`` / ``credential_pattern``, or
        ``([], None)``. For text split across strings (:mod:`stepfork.trace._redaction_streams`)."""
        spans, registered = self._spans(text)
        if not spans:
            return [], None
        return spans, "registered_secret" if registered else "credential_pattern"

    def _spans(self, text: str) -> tuple[list[tuple[int, int]], bool]:
        """The ``(start, end)`` of every match of every rule in ``text``, and whether a registered secret
        matched."""
        spans: list[tuple[int, int]] = []
        if self._secret_re is not None:
            spans += [(m.start(), m.end(1)) for m in self._secret_re.finditer(text)]
        registered = bool(spans)
        low = text.lower()
        for pattern, needles in self._patterns:
            if needles is not None and not any(map(low.__contains__, needles)):
                continue
            if isinstance(pattern, str):  # a default pattern
                spans += _matches(_compiled(pattern), text, True)
            else:
                spans += _matches(pattern, text, False)
        return spans, registered

    def blob_may_match(self, blob: bytes) -> bool:
        """False when no string inside the JSON text ``blob`` (any key order, UTF-8) can match a rule.

        True when a needle, a registered secret (as JSON escapes it) or a tagged ``bytes``/``str`` value
        (base64 hides its text) occurs, or when the screen is off (extra patterns): the walk decides then.
        """
        screen = self._screen
        if screen is None:
            return True
        if b"$" in blob and (b'"$stepfork":"bytes"' in blob or b'"$stepfork":"str"' in blob):
            return True  # base64 hides the text from the screen
        if self._secret_blob_re is not None and self._secret_blob_re.search(blob):
            return True
        low = blob.lower()
        if _NEEDLES is not None:
            first, second = _NEEDLES
            return first(low) or second(low)
        return any(map(low.__contains__, screen))

    def blob_may_match_values(self, blob: bytes, keys: Iterable[Any]) -> bool:
        """:meth:`blob_may_match` for the JSON text ``blob`` of a value whose distinct dict keys are
        ``keys``, not counting needles that only occur in clean keys.

        Provider payloads hold keys such as ``max_tokens`` and ``prompt_tokens``, where the screen finds
        the needle ``token`` on every call and sends the payload to the walk for nothing. A key made only
        of ``[A-Za-z0-9_-]`` that no text rule changes (:meth:`redact`, cached) is cut out of the text as
        ``"key":`` before screening again. Sound because, in compact JSON, a quote right after such a key
        is an unescaped delimiter followed by ``:``, so every cut is the text of an object key (never of a
        string value), and the cut leaves ``{`` or ``,`` (no needle character) next to the value. Any
        other key holding a needle keeps the answer True (the walk decides).
        """
        if not self.blob_may_match(blob):
            return False
        cuts = self._key_cuts
        found: list[bytes] = []
        for key in keys:
            cut = cuts.get(key, b"-")
            if cut == b"-":
                cut = self._key_cut(key)
                if len(cuts) > 10_000:  # bounded: keys can be data
                    cuts.clear()
                cuts[key] = cut
            if cut is None:
                return True
            if cut:
                found.append(cut)
        if not found:
            return True  # the needle is in a value
        for cut in found:
            blob = blob.replace(cut, b"")
        return self.blob_may_match(blob)

    def _key_cut(self, key: Any) -> bytes | None:
        screen = self._screen
        if type(key) is not str or screen is None:
            return None
        low = key.lower().encode("utf-8", "surrogatepass")
        if not any(needle in low for needle in screen) and not self._secret_in(key):
            return b""
        if _PLAIN_KEY.fullmatch(key) is None or self.redact(key)[1] is not None:
            return None
        return b'"' + key.encode("ascii") + b'":'

    def _secret_in(self, key: str) -> bool:
        return self._secret_re is not None and self._secret_re.search(key) is not None

    def strings_may_match(self, value: Any) -> bool:
        """Screen a whole JSON ``value`` in one pass (:meth:`blob_may_match` over its orjson text); False
        means no string in it can match (dict keys still count); True for a scalar or when orjson
        refuses the value."""
        if self._screen is None or type(value) not in (dict, list):
            return True
        import orjson  # here: the quick verdict of stepfork validate screens text without it (cold start)

        try:
            blob = orjson.dumps(value)
        except orjson.JSONEncodeError:
            return True
        return self.blob_may_match(blob)
