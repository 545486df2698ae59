"""The order in which a later value lists concurrent siblings' parts, when that order alone differs.

Calls the recording proves concurrent (the groups of replay's ``auto`` ordering: a thread pool's tool calls,
an ``asyncio.gather``) have no order of their own; a framework that lists their results in a later prompt
picks one. smolagents' ``ToolCallingAgent`` sorts them by the provider's tool-call ids
(``sorted(parallel_calls.keys())``), which are random: two live recordings of the same code list
``get_weather`` and ``get_air_quality`` (their calls in ``Calling tools: [...]``, their observations one per
line) in either order, half the time each. Provider ids are noise, so an order made from them is noise too.

:class:`SiblingGroup` holds, for each sibling of one group, on each side, its *markers*: the strings that
belong to it alone among its siblings (its tool name, the string leaves of its input, its output text and
the string leaves of its output, JSON-escaped too; a marker another sibling of the group shares is
dropped). :meth:`SiblingGroup.reordered` cuts two differing strings into *units* (lines, JSON-escaped
``\\n`` lines, the items of a ``[...]`` list, and each occurrence of a sibling's output text) and says
whether they differ only by the order of units that each belong to exactly one sibling: every unit that
differs at its place must belong to one sibling on each side, at least two siblings must have moved, and
each sibling's units, taken in order, must be equal to its counterpart's (up to the comparison's renaming
of ids). A unit that belongs to no sibling, or to two, never moves: a real reorder of anything else, or a
sibling's changed text, is still a change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

SIBLING_ORDER = "sibling order"
MIN_MARKER = 3
MIN_OUTPUT = 8
_WORD = re.compile(r"[A-Za-z0-9_]")

Equal = Callable[[str, str, bool], bool]
"""``equal(left, right, bind)``: two strings equal up to the comparison's renaming (bind: keep the ids
paired when they are)."""


def _strings(value: Any, minimum: int) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item.strip()) >= minimum:
                found.append(item.strip())
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


@dataclass(frozen=True, slots=True)
class Markers:
    """One sibling's markers on one side: ``texts`` (output texts: units are cut at them) and ``names``
    (its tool name and input strings: a unit holding one belongs to the sibling); ``material`` is every
    string of the call (label, input, output), against which the other siblings' markers are checked."""

    texts: tuple[str, ...]
    names: tuple[str, ...]
    material: tuple[str, ...] = ()

    @classmethod
    def of(cls, label: str, input_value: Any, output: Any) -> Markers:
        """The markers of a call labelled ``label`` with ``input_value`` and ``output`` (JSON values)."""
        texts = set(_strings(output, MIN_OUTPUT))
        texts |= {_escaped(t) for t in texts}
        names = {label, *_strings(input_value, MIN_MARKER)}
        material = {label, *_strings(input_value, 1), *_strings(output, 1)}
        return cls(tuple(sorted(texts, key=len, reverse=True)), tuple(sorted(names)), tuple(sorted(material)))


def _distinct(group: Sequence[Markers]) -> list[Markers]:
    """Each sibling's markers without those found in another sibling's strings (``Paris``, the input of
    both ``get_weather`` and ``get_air_quality``, belongs to neither)."""
    out = []
    for index, own in enumerate(group):
        others = [text for j, other in enumerate(group) if j != index for text in other.material]

        def alone(marker: str, others: list[str] = others) -> bool:
            return not any(marker in other for other in others)

        out.append(Markers(tuple(filter(alone, own.texts)), tuple(filter(alone, own.names))))
    return out


def _units(text: str) -> list[str]:
    """``text`` cut at line ends (and JSON-escaped ``\\n``) and at the items of ``[...]`` lists; the cuts
    are units of their own (so ``"".join(units) == text``)."""
    units: list[str] = []
    stack: list[str] = []
    start = 0
    index = 0

    def cut(end: int, separator_end: int) -> None:
        nonlocal start
        if end > start:
            units.append(text[start:end])
        if separator_end > end:
            units.append(text[end:separator_end])
        start = separator_end

    while index < len(text):
        char = text[index]
        if char == "\n":
            cut(index, index + 1)
        elif text.startswith("\\n", index):
            cut(index, index + 2)
            index += 1
        elif char in "[{(":
            if char == "[":
                cut(index, index + 1)
            stack.append(char)
        elif char in "]})":
            if stack:
                stack.pop()
            if char == "]":
                cut(index, index + 1)
        elif char == "," and stack and stack[-1] == "[":
            end = index + 1
            while end < len(text) and text[end] == " ":
                end += 1
            cut(index, end)
            index = end - 1
        index += 1
    cut(len(text), len(text))
    return units


def _occurs(marker: str, unit: str) -> bool:
    start = unit.find(marker)
    while start >= 0:
        end = start + len(marker)
        before = start == 0 or not _WORD.match(unit[start - 1]) or not _WORD.match(marker[0])
        after = end == len(unit) or not _WORD.match(unit[end]) or not _WORD.match(marker[-1])
        if before and after:
            return True
        start = unit.find(marker, start + 1)
    return False


class SiblingGroup:
    """One group of concurrent siblings, aligned: sibling ``k`` is ``left[k]`` in the baseline and
    ``right[k]`` in the candidate (module docstring).

    Args:
        left, right: each sibling's :class:`Markers` on each side, in the same order (same length).
    """

    def __init__(self, left: Sequence[Markers], right: Sequence[Markers]) -> None:
        if len(left) != len(right):
            raise ValueError("the two sides of a sibling group have as many siblings")
        self.left = _distinct(left)
        self.right = _distinct(right)

    def _cut(self, text: str, side: list[Markers]) -> list[str]:
        texts = sorted({t for m in side for t in m.texts}, key=len, reverse=True)
        units: list[str] = []
        for unit in _units(text):
            units.extend(_split_at(unit, texts))
        return units

    @staticmethod
    def _owner(unit: str, side: list[Markers]) -> int | None:
        owners = [k for k, m in enumerate(side) if any(_occurs(x, unit) for x in (*m.texts, *m.names))]
        return owners[0] if len(owners) == 1 else None

    def reordered(self, left: str, right: str, equal: Equal) -> bool:
        """True when ``left`` and ``right`` differ only by the order of the siblings' units (module
        docstring); the ids of the units it pairs are then bound through ``equal``."""
        a, b = self._cut(left, self.left), self._cut(right, self.right)
        if len(a) != len(b):
            return False
        moved = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if not equal(x, y, False)]
        owners_a = [self._owner(a[i], self.left) for i in moved]
        owners_b = [self._owner(b[i], self.right) for i in moved]
        known_a = [k for k in owners_a if k is not None]
        known_b = [k for k in owners_b if k is not None]
        if len(known_a) < len(moved) or len(known_b) < len(moved) or sorted(known_a) != sorted(known_b):
            return False
        if len(set(owners_a)) < 2 or owners_a == owners_b:
            return False
        pairs = [
            (i, j)
            for k in set(owners_a)
            for i, j in zip(
                (p for p, o in zip(moved, owners_a, strict=True) if o == k),
                (p for p, o in zip(moved, owners_b, strict=True) if o == k),
                strict=True,
            )
        ]
        if not all(equal(a[i], b[j], False) for i, j in pairs):
            return False
        for i, j in pairs:
            equal(a[i], b[j], True)
        return True


def _split_at(unit: str, texts: Iterable[str]) -> list[str]:
    """``unit`` cut before and after each occurrence of each of ``texts`` (longest first)."""
    pieces = [unit]
    for text in texts:
        out: list[str] = []
        for piece in pieces:
            while piece != text and text in piece:
                at = piece.index(text)
                out.extend(p for p in (piece[:at], text) if p)
                piece = piece[at + len(text) :]
            if piece:
                out.append(piece)
        pieces = out
    return pieces


Call = tuple[Hashable, str, Any, Any]
"""A sibling call as :func:`aligned_groups` takes it: ``(identity, label, input, output)``."""


def aligned_groups(left: Sequence[Sequence[Call]], right: Sequence[Sequence[Call]]) -> list[SiblingGroup]:
    """Pair the baseline's groups of concurrent siblings with the candidate's (each group's calls in the
    diff's canonical order: identity, then input): a group pairs with the first unpaired group on the other
    side whose calls have the same identities in the same order. Groups left unpaired are dropped."""
    out: list[SiblingGroup] = []
    used: set[int] = set()
    for group in left:
        identities = [call[0] for call in group]
        for index, other in enumerate(right):
            if index not in used and [call[0] for call in other] == identities:
                used.add(index)
                out.append(
                    SiblingGroup(
                        [Markers.of(label, given, made) for _, label, given, made in group],
                        [Markers.of(label, given, made) for _, label, given, made in other],
                    )
                )
                break
    return out
