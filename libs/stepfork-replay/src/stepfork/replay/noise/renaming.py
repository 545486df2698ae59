"""Equality up to a one-to-one renaming of ids (issue 28).

One :class:`Renaming` lives for one comparison scope (a replay's run output; a whole ``diff``, across its
steps in step order). Strings are compared token by token (:func:`stepfork.replay.noise.ids.split`): the
separators must be equal, and each pair of tokens must be equal or two opaque ids the scope may rename
(fresh ids; in the diff also ids a dependency generated, paired where two aligned outputs hold them). A
pair binds both ways, so a renaming never maps two ids to one: ``["a", "a"]`` never equals ``["a", "b"]``,
and an id equal on both sides binds to itself.
"""

from __future__ import annotations

from collections.abc import Callable

from stepfork.replay.noise.ids import is_opaque_id, split

Allow = Callable[[str, str], bool]
"""Whether two different unbound opaque ids may be renamed into each other."""


class Renaming:
    """A partial bijection between the ids of the left (expected, baseline) and the right side.

    Attributes:
        forward: left id -> right id; backward: right id -> left id (each pair in both).
    """

    def __init__(self) -> None:
        self.forward: dict[str, str] = {}
        self.backward: dict[str, str] = {}

    def renamed(self) -> list[tuple[str, str]]:
        """The pairs whose two ids differ (the renaming proper), in the order they were bound."""
        return [(a, b) for a, b in self.forward.items() if a != b]

    def _state(self, left: str, right: str, extra: dict[str, str], extra_back: dict[str, str]) -> bool | None:
        mapped = self.forward.get(left, extra.get(left))
        if mapped is not None:
            return mapped == right
        if right in self.backward or right in extra_back:
            return False
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
        left_seps, left_tokens = split(left)
        right_seps, right_tokens = split(right)
        if left_seps != right_seps or len(left_tokens) != len(right_tokens):
            return False
        extra: dict[str, str] = {}
        extra_back: dict[str, str] = {}
        for a, b in zip(left_tokens, right_tokens, strict=True):
            if a == b and not is_opaque_id(a):
                continue
            if not (is_opaque_id(a) and is_opaque_id(b)):
                return False
            state = self._state(a, b, extra, extra_back)
            if state is False:
                return False
            if state is None:
                if a != b and not allow(a, b):
                    return False
                extra[a] = b
                extra_back[b] = a
        if bind:
            self.forward.update(extra)
            self.backward.update(extra_back)
        return True

    def pair(self, left: str, right: str) -> None:
        """Bind the ids of two strings at a place both sides' dependency generated (an ignored provider id
        of two aligned outputs), where consistent; a conflicting pair is left unbound, silently. The two
        whole strings pair too (a short fingerprint or request id that is no opaque id by shape)."""
        if left != right and self._state(left, right, {}, {}) is None:
            self.forward[left] = right
            self.backward[right] = left
        left_tokens, right_tokens = split(left)[1], split(right)[1]
        if len(left_tokens) != len(right_tokens):
            return
        for a, b in zip(left_tokens, right_tokens, strict=True):
            if is_opaque_id(a) and is_opaque_id(b) and self._state(a, b, {}, {}) is None:
                self.forward[a] = b
                self.backward[b] = a
