"""Equality up to a one-to-one renaming of ids (issue 28).

One :class:`Renaming` lives for one comparison scope (a replay's run output; a whole ``diff``, across its
steps in step order). Strings are compared token by token (:func:`split_ids`: each minted span a side's
finder knows is one token, the rest cut by :data:`stepfork.replay.noise.ids.TOKEN`): the separators must
be equal, and each pair of tokens must be equal or two ids the scope may rename (opaque ids by shape or
minted spans; fresh ones, and in the diff also ids a dependency generated, paired where two aligned
outputs hold them). A
pair binds both ways, so a renaming never maps two ids to one: ``["a", "a"]`` never equals ``["a", "b"]``,
and an id equal on both sides binds to itself.

A whole value two aligned dependency outputs hold at a noise place (a provider id at a rule's path, a
tool's ``observed_at`` clock time; :meth:`Renaming.pair`) is *carried*: wherever the agent passes it on,
inside a longer string too (a JSON-encoded tool result in the next request, an answer quoting it), it is
one token that compares equal to its partner only (NEWCOMER3 F1). A carried value must start and end at
token boundaries and be :data:`MIN_CARRIED` characters or more: a short value (``412``) would rename every
equal number after it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Protocol

from stepfork.replay.noise.ids import TOKEN, hex_fold, is_opaque_id

Allow = Callable[[str, str], bool]
"""Whether two different unbound opaque ids may be renamed into each other."""

MIN_CARRIED = 8
"""The shortest whole value a pairing carries into longer strings (module docstring)."""

Carried = dict[str, dict[int, set[str]]]
"""One side's carried values, by their first token, then by their length."""


class SpanFinder(Protocol):
    """Where a side's minted values are in a string (``stepfork.trace.minting.Spans``)."""

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` character offsets (end exclusive, left to right, not overlapping) of the
        minted values found in ``text``; empty when there are none. Never raises."""
        ...


Split = tuple[list[str], list[str], dict[int, list[tuple[int, int]]]]


def split_ids(text: str, spans: list[tuple[int, int]] | tuple[()] = ()) -> Split:
    """``(separators, tokens, minted)`` of ``text``: ``text == seps[0] + toks[0] + seps[1] + ...`` (one
    more separator than tokens, each possibly empty). Tokens are :data:`stepfork.replay.noise.ids.TOKEN`
    matches, except that each of ``spans`` (minted values, left to right) is merged with the tokens it
    touches into one token (``ref-`` and ``79949b97`` are one token; a ``token_urlsafe`` value that starts
    with ``-`` is one token, its ``-`` included); ``minted`` maps those tokens' indexes to their minted
    spans, relative to the token."""
    pieces: list[tuple[int, int, tuple[tuple[int, int], ...]]] = [
        (m.start(), m.end(), ()) for m in TOKEN.finditer(text)
    ]
    for start, end in spans:
        touched = [p for p in pieces if p[0] < end and p[1] > start]
        low = min([start, *(p[0] for p in touched)])
        high = max([end, *(p[1] for p in touched)])
        inner = (*(s for p in touched for s in p[2]), (start, end))
        pieces = [p for p in pieces if p not in touched]
        pieces.append((low, high, inner))
        pieces.sort(key=lambda p: p[0])
    separators: list[str] = []
    found: list[str] = []
    minted: dict[int, list[tuple[int, int]]] = {}
    last = 0
    for number, (start, end, inner) in enumerate(pieces):
        separators.append(text[last:start])
        found.append(text[start:end])
        if inner:
            minted[number] = sorted((a - start, b - start) for a, b in inner)
        last = end
    separators.append(text[last:])
    return separators, found, minted


def _skeleton(token: str, spans: list[tuple[int, int]]) -> list[str]:
    """The parts of ``token`` outside its minted ``spans``."""
    parts, last = [], 0
    for start, end in spans:
        parts.append(token[last:start])
        last = end
    parts.append(token[last:])
    return parts


class Renaming:
    """A partial bijection between the ids of the left (expected, baseline) and the right side.

    Args:
        left, right: where each side's minted values are (their spans are ids, whatever their shape);
            None: ids by shape only.

    Attributes:
        forward: left id -> right id; backward: right id -> left id (each pair in both).
    """

    def __init__(
        self,
        left: SpanFinder | None = None,
        right: SpanFinder | None = None,
        *,
        vouch_left: bool = False,
        vouch_right: bool = False,
    ) -> None:
        self.forward: dict[str, str] = {}
        self.backward: dict[str, str] = {}
        self._left = left
        self._right = right
        self._vouch_left = vouch_left
        self._vouch_right = vouch_right
        self._hex_forward: dict[str, str] = {}  # the pairs' hex spellings (ids.hex_fold), left -> right
        # carried values (module docstring) of each side, by their first token, then by their length
        self._carried_left: Carried = {}
        self._carried_right: Carried = {}

    def _split(self, left: str, right: str, *, carried: bool = True) -> tuple[Split, Split]:
        """Both strings split at their minted spans; a side that says nothing of what it minted (a
        ``vouch`` side: a recording without minted.json) is cut where the other side's spans are, when the
        two strings are as long (whether that pair may be renamed is ``allow``'s to say); with ``carried``,
        each side's carried values (module docstring) are one token too."""
        left_spans = self._left.spans(left) if self._left is not None else []
        right_spans = self._right.spans(right) if self._right is not None else []
        if len(left) == len(right):
            if self._vouch_left and not left_spans:
                left_spans = right_spans
            elif self._vouch_right and not right_spans:
                right_spans = left_spans
        if carried and self._carried_left:
            left_spans = _merged(left_spans, _carried_spans(left, self._carried_left))
            right_spans = _merged(right_spans, _carried_spans(right, self._carried_right))
        if left == right and left_spans != right_spans:
            # one string: cut alike, so equal ids bind to themselves (a provider id minted on one side
            # only, by a fake transport in the recording's process, split only that side: DIVERGED)
            left_spans = right_spans = _merged(left_spans, right_spans)
        return split_ids(left, left_spans), split_ids(right, right_spans)

    def trial(self) -> Renaming:
        """A copy to try a comparison on: the same sides, its own pairs (what it binds stays there)."""
        other = copy.copy(self)
        other.forward, other.backward = dict(self.forward), dict(self.backward)
        other._hex_forward = dict(self._hex_forward)
        other._carried_left = copy.deepcopy(self._carried_left)
        other._carried_right = copy.deepcopy(self._carried_right)
        return other

    def blank(self) -> Renaming:
        """A copy with nothing bound: the same sides, no pairs and no carried values."""
        other = copy.copy(self)
        other.forward, other.backward, other._hex_forward = {}, {}, {}
        other._carried_left, other._carried_right = {}, {}
        return other

    def renamed(self) -> list[tuple[str, str]]:
        """The pairs whose two ids differ (the renaming proper), in the order they were bound."""
        return [(a, b) for a, b in self.forward.items() if a != b]

    def _state(self, left: str, right: str, extra: dict[str, str], extra_back: dict[str, str]) -> bool | None:
        mapped = self.forward.get(left, extra.get(left))
        if mapped is not None:
            return mapped == right
        if right in self.backward or right in extra_back:
            return False
        folded = hex_fold(left)
        spelled = self._hex_forward.get(folded) if folded is not None else None
        if spelled is not None:  # a paired hex id passed on in another spelling (NEWCOMER5 F4)
            return spelled == hex_fold(right)
        return None

    def strings_equal(self, left: str, right: str, allow: Allow, *, bind: bool = True) -> bool:
        """True when ``left`` and ``right`` are equal up to this renaming, extended where ``allow`` lets
        two unbound ids pair; the extension is kept only when the whole strings are equal (and ``bind``).

        Non-id tokens and separators must be equal; an id token equal on both sides binds to itself.
        """
        if left == right and not bind:
            return True
        if left != right and self.forward.get(left) == right:
            return True  # two whole values paired where two aligned dependency outputs held them
        (left_seps, left_tokens, left_minted), (right_seps, right_tokens, right_minted) = self._split(
            left, right
        )
        if left_seps != right_seps or len(left_tokens) != len(right_tokens):
            return False
        extra: dict[str, str] = {}
        extra_back: dict[str, str] = {}
        for number, (a, b) in enumerate(zip(left_tokens, right_tokens, strict=True)):
            a_id = number in left_minted or is_opaque_id(a)
            if a == b and not a_id:
                continue
            if not (a_id and (number in right_minted or is_opaque_id(b))):
                return False
            state = self._state(a, b, extra, extra_back)
            if state is False:
                return False
            if state is None:
                # a minted value inside a longer token that is no id by shape: what is around it must be
                # equal (ref-, ref-); an id by shape (a uuid7, whose clock part no one minted) pairs whole
                if (
                    a != b
                    and number in left_minted
                    and number in right_minted
                    and not (is_opaque_id(a) and is_opaque_id(b))
                    and _skeleton(a, left_minted[number]) != _skeleton(b, right_minted[number])
                ):
                    return False
                if a != b and not allow(a, b):
                    return False
                extra[a] = b
                extra_back[b] = a
        if bind:
            self.forward.update(extra)
            self.backward.update(extra_back)
            for a, b in extra.items():
                self._spell(a, b)
        return True

    def _spell(self, left: str, right: str) -> None:
        """Keep the hex spelling of a bound pair (:func:`~stepfork.replay.noise.ids.hex_fold`)."""
        folded_left, folded_right = hex_fold(left), hex_fold(right)
        if folded_left is not None and folded_right is not None:
            self._hex_forward.setdefault(folded_left, folded_right)

    def mismatch(self, left: str, right: str, allow: Allow) -> tuple[int, int]:
        """The character offsets, in ``left`` and in ``right``, of their first difference up to this
        renaming (a separator or a token that differs, an id neither bound to its partner nor one
        ``allow`` would pair); where one ends when the other goes on; ``(0, 0)`` for equal strings. Binds
        nothing: for showing where two strings differ, not for deciding whether they do."""
        (left_seps, left_tokens, left_minted), (right_seps, right_tokens, right_minted) = self._split(
            left, right
        )
        at_left = at_right = 0
        for number in range(min(len(left_tokens), len(right_tokens)) + 1):
            sep_a, sep_b = left_seps[number], right_seps[number]
            if sep_a != sep_b:
                common = _common(sep_a, sep_b)
                return at_left + common, at_right + common
            at_left, at_right = at_left + len(sep_a), at_right + len(sep_b)
            if number >= min(len(left_tokens), len(right_tokens)):
                break
            a, b = left_tokens[number], right_tokens[number]
            if a != b:
                paired = self.forward.get(a)
                ids = (number in left_minted or is_opaque_id(a)) and (
                    number in right_minted or is_opaque_id(b)
                )
                if not (paired == b or (paired is None and b not in self.backward and ids and allow(a, b))):
                    common = 0 if ids else _common(a, b)
                    return at_left + common, at_right + common
            at_left, at_right = at_left + len(a), at_right + len(b)
        return (at_left, at_right) if left != right else (0, 0)

    def pair(self, left: str, right: str) -> None:
        """Bind the ids of two strings at a place both sides' dependency generated (an ignored provider id
        of two aligned outputs), where consistent; a conflicting pair is left unbound, silently. The two
        whole strings pair too (a short fingerprint or request id that is no opaque id by shape)."""
        if left != right and self._state(left, right, {}, {}) is None:
            self.forward[left] = right
            self.backward[right] = left
            self._spell(left, right)
            if _carriable(left) and _carriable(right) and not (is_opaque_id(left) and is_opaque_id(right)):
                _carry(self._carried_left, left)  # two ids by shape need no carrying: their tokens pair
                _carry(self._carried_right, right)
        # the ids inside bind one by one too (an echo of one of them alone), carried values left whole aside
        (_, left_tokens, left_minted), (_, right_tokens, right_minted) = self._split(
            left, right, carried=False
        )
        if len(left_tokens) != len(right_tokens):
            return
        for number, (a, b) in enumerate(zip(left_tokens, right_tokens, strict=True)):
            a_id = number in left_minted or is_opaque_id(a)
            b_id = number in right_minted or is_opaque_id(b)
            if a_id and b_id and self._state(a, b, {}, {}) is None:
                self.forward[a] = b
                self.backward[b] = a
                self._spell(a, b)


def _carriable(value: str) -> bool:
    """True for a value long enough to carry that starts and ends at a token boundary (module docstring)."""
    return len(value) >= MIN_CARRIED and value[0].isalnum() and value[-1].isalnum()


def _carry(store: Carried, value: str) -> None:
    found = TOKEN.match(value)
    if found is not None:
        store.setdefault(found.group(), {}).setdefault(len(value), set()).add(value)


def _carried_spans(text: str, carried: Carried) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each carried value of one side in ``text``: starting at a token's start,
    ending at a token's end, left to right, not overlapping."""
    if not carried or len(text) < MIN_CARRIED:
        return []
    matches = list(TOKEN.finditer(text))
    if not any(m.group() in carried for m in matches):
        return []
    ends = {m.end() for m in matches}
    found: list[tuple[int, int]] = []
    reached = 0
    for match in matches:
        start = match.start()
        if start < reached:
            continue
        by_length = carried.get(match.group())
        if by_length is None:
            continue
        for size in sorted(by_length, reverse=True):  # the longest carried value at a place wins
            end = start + size
            if end in ends and text[start:end] in by_length[size]:
                found.append((start, end))
                reached = end
                break
    return found


def _merged(spans: list[tuple[int, int]], more: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` with those of ``more`` that overlap none of them, left to right."""
    if not more:
        return spans
    kept = [m for m in more if not any(m[0] < end and start < m[1] for start, end in spans)]
    return sorted([*spans, *kept])


def _common(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their start."""
    return next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
