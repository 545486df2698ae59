"""Compare two JSON values and say which differences are noise (issue 28; docs/diff.md, "Noise rules").

:class:`Comparison` is one scope: one :class:`~stepfork.replay.noise.renaming.Renaming`, the origins of
each side (:class:`~stepfork.replay.noise.origins.Origins`) and the rules. :meth:`Comparison.compare`
walks two values in canonical order (object keys sorted, lists by position) and returns every leaf
difference, each with ``noise`` None (a real difference) or why it is noise:

1. a path rule names the place (``body``: an LLM response's JSON; ``headers``; a ``message`` type), or a
   user's ``--ignore`` pattern does: the rule's name. In a dependency output two strings there pair their
   ids into the renaming; anywhere else a rule never excuses a differing id (a handed-out id must match
   exactly, a fresh one up to the renaming);
2. two strings equal up to the renaming: ``renamed id`` (fresh ids; in a dependency output, any two ids:
   the dependency generated them); so are two tagged datetimes by their ISO text, two numbers of an
   epoch's length by their text (a ``datetime`` object, a ``time.time()`` the run returned: a reading of
   each run's clock, NEWCOMER4 F4) and two integers of 6 digits or more by their text (a code the run
   drew). Such a value equal on both sides binds to itself, as an equal string does;
3. a timing field with a clock or duration shape on each side: ``timing``;
4. a key one side lacks whose value on the other is empty (null, false, [], {}) inside a framework
   message, an LLM output or a framework request, or (null, [], {}: never false) inside a provider request
   (the HTTP capture's input of an LLM API call): ``new field``.

Where a value sits is given by ``where`` (:data:`WHERES`); inside it, an HTTP capture's output is split
into ``headers``, the ``json`` body and each SSE event's ``data``, and a framework message object (tagged
``{"$stepfork": "model", "type": T, "value": ...}`` or a plain dump the rules recognise) is a ``message``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from stepfork.replay.noise.clock import clock_forms, same_clock_forms
from stepfork.replay.noise.ids import is_opaque_id, may_hold_id, split
from stepfork.replay.noise.origins import Origins, fresh_pair
from stepfork.replay.noise.renaming import Renaming
from stepfork.replay.noise.rules import NoiseRules, Rule
from stepfork.replay.noise.siblings import SIBLING_ORDER, SiblingGroup
from stepfork.replay.noise.streams import CHUNKING, describe, reassemble
from stepfork.replay.noise.timing import TAG, is_epoch, timing_shaped
from stepfork.trace.minting import MIN_NUMBER

WHERES = ("llm_input", "llm_output", "tool_input", "tool_output", "run_output", "other")
"""Where a compared value sits: the LLM and tool inputs and outputs are the recording's, ``run_output``
the run's final output, ``other`` anything else (state, error messages)."""

RENAMED = "renamed id"
TIMING = "timing"
NEW_FIELD = "new field"
_HTTP_BODIES = ("json", "sse", "eventstream", "text", "base64", "incomplete")
_TAGGED_OBJECTS = frozenset(
    {"model", "dataclass"}
)  # pydantic models (AIMessage), dataclasses (ModelResponse)
_CLOCKS = frozenset({"datetime", "date", "time", "timedelta"})  # tagged clocks compare as one value


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


ABSENT: Final = _Missing()
"""The value of an absent key or list item in a :class:`Difference` (callers map it to their own
sentinel)."""

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Difference:
    """One leaf difference: ``path`` (keys and indexes from the compared root), ``expected`` and ``actual``
    (:data:`ABSENT` when absent), ``noise`` (None: a real difference; else the rule name, ``renamed id``,
    ``timing`` or ``new field``) and ``at``."""

    path: Path
    expected: Any
    actual: Any
    noise: str | None = None
    at: tuple[int, int] | None = None
    """For a real difference of two strings: the character offsets, in each, of their first difference up
    to the renaming (not the first differing character: that may be a renamed id); else None."""


@dataclass(frozen=True, slots=True)
class _Frame:
    kind: str  # body, headers, message, http, sse, events, event, plain
    root: int  # len(path) at the frame's root
    area: str  # one of WHERES
    dep: bool  # inside a dependency output: ids pair freely
    framework: bool  # a framework request (an LLM input recorded at a wrapper)
    mtype: str | None = None
    provider: bool = False  # a provider request (the HTTP capture's input of an LLM API call)


def same_leaf(a: Any, b: Any) -> bool:
    """JSON equality of two leaves as canonical bytes see it: ``1`` != ``1.0``, ``True`` != ``1``,
    ``-0.0`` != ``0.0`` (REFERENCE-NOTES.md 2.1)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return repr(a) == repr(b)
    return bool(a == b)


def same_json(a: Any, b: Any) -> bool:
    """True when two JSON values are canonically equal (types kept: ``1`` != ``1.0``, ``True`` != ``1``)."""
    return a == b and _same_types(a, b)  # Python's == first: it is False for every other difference


def _same_types(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return False
        return all(_same_types(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return same_leaf(a, b)


def rule_path(parts: Iterable[str | int]) -> str:
    """``a.b[1].c``: a path relative to a rule's place, in the rules' syntax."""
    out = ""
    for key in parts:
        out = f"{out}[{key}]" if isinstance(key, int) else (f"{out}.{key}" if out else str(key))
    return out


class Comparison:
    """One comparison scope (module docstring).

    Args:
        rules: the rules; None compares strictly (no rule, no renaming: ``--strict``).
        left, right: where each side's ids came from (None: no recording, every id fresh); the replay
            gives the same recording for both.
        ignore: the user's rule for a difference's full path (``--ignore``: given ``output.json.id``, the
            rule that ignores it, or None), applied before the shipped rules; None for none.
        siblings: the groups of concurrent sibling calls (the diff's; :mod:`stepfork.replay.noise.siblings`):
            two strings that differ only by the order of their siblings' parts differ as ``sibling order``.
    """

    def __init__(
        self,
        rules: NoiseRules | None,
        left: Origins | None = None,
        right: Origins | None = None,
        *,
        ignore: Callable[[str], Rule | None] | None = None,
        siblings: Sequence[SiblingGroup] = (),
    ) -> None:
        self.rules = rules
        self.left = left if left is not None else Origins()
        self.right = right if right is not None else Origins()
        self.renaming = Renaming(
            self.left.made,
            self.right.made,
            vouch_left=self.left.legacy and self.right.minted is not None,
            vouch_right=self.right.legacy and self.left.minted is not None,
        )
        self._ignore = ignore
        self.siblings = tuple(siblings)

    def compare(
        self, expected: Any, actual: Any, where: str = "other", *, prefix: Path = ()
    ) -> list[Difference]:
        """Every difference between ``expected`` and ``actual`` (module docstring), in canonical order;
        empty when they are equal up to noise. ``prefix``: path parts above the values (a diff field,
        ``("output",)``), kept in each difference's path.

        Raises:
            ValueError: an unknown ``where``.
        """
        if where not in WHERES:
            raise ValueError(f"unknown place {where!r}; expected one of {', '.join(WHERES)}")
        out: list[Difference] = []
        if self.rules is None:
            if not same_json(expected, actual):
                self._walk(expected, actual, prefix, None, out)
            return out
        if same_json(expected, actual):
            return out
        frame = self._root_frame(expected, actual, where, len(prefix))
        self._walk(expected, actual, prefix, frame, out)
        return out

    # -- frames ------------------------------------------------------------------------------------------

    def _root_frame(self, a: Any, b: Any, where: str, root: int) -> _Frame:
        dep = where in ("llm_output", "tool_output")
        if where == "llm_output":
            if _is_http(a) and _is_http(b):
                return _Frame("http", root, where, dep, False)
            return _Frame("body", root, where, dep, True)
        if where == "tool_output" and _is_http(a) and _is_http(b):
            # an http call's response (issue 29): its headers are a provider's (date, request ids); its
            # body is data, compared as any tool output's
            return _Frame("http", root, where, dep, False)
        framework = where == "llm_input" and isinstance(a, dict) and "endpoint" in a and "request" in a
        provider = where == "llm_input" and _is_request(a) and _is_request(b)
        return _Frame("plain", root, where, dep, framework, provider=provider)

    def _child(self, frame: _Frame, key: str | int, depth: int) -> _Frame:
        kind = frame.kind
        if kind == "http":
            if key == "headers":
                return _Frame("headers", depth, frame.area, frame.dep, False)
            if key == "json" and frame.area == "llm_output":
                return _Frame("body", depth, frame.area, frame.dep, False)
            if key in ("sse", "eventstream"):  # Server-Sent Events; AWS's event stream (Bedrock)
                return _Frame("sse", depth, frame.area, frame.dep, False)
            return _Frame("plain", depth, frame.area, frame.dep, False)
        if kind == "sse":
            return _Frame("events" if key == "events" else "plain", depth, frame.area, frame.dep, False)
        if kind == "events":
            return _Frame("event", depth, frame.area, frame.dep, False)
        if kind == "event":
            if key == "data" or key == "json":  # an SSE event's data; an event-stream message's JSON
                return _Frame("body", depth, frame.area, frame.dep, False)
            return _Frame("plain", depth, frame.area, frame.dep, False)
        return frame

    def _message(self, frame: _Frame, a: dict[str, Any], b: dict[str, Any], depth: int) -> _Frame | None:
        """The frame of a framework message rooted at this pair of dicts (for its children), or None."""
        assert self.rules is not None
        if a.get(TAG) in _TAGGED_OBJECTS and a.get(TAG) == b.get(TAG):
            kind = a.get("type")
            if kind == b.get("type") and isinstance(kind, str) and kind in self.rules.message_types:
                # the tagged form of a framework message: its "value" is the message
                return _Frame("tagged", depth, frame.area, frame.dep, frame.framework, kind)
            return None  # another object: inside a message it belongs to the message
        found = self.rules.message_type(a)
        if found is not None and found == self.rules.message_type(b):
            return _Frame("message", depth, frame.area, frame.dep, frame.framework, found)
        return None

    # -- the walk ----------------------------------------------------------------------------------------

    def _walk(self, a: Any, b: Any, path: Path, frame: _Frame | None, out: list[Difference]) -> None:
        if (
            isinstance(a, dict)
            and isinstance(b, dict)
            and not (a.get(TAG) in _CLOCKS and b.get(TAG) in _CLOCKS)
        ):
            inner = frame
            if frame is not None and frame.kind not in ("http", "sse", "events", "event", "headers"):
                found = self._message(frame, a, b, len(path))
                if found is not None:
                    inner = found
            rechunked = None
            if inner is not None and inner.kind == "sse":
                rechunked = self._rechunked(a, b, path, inner)  # the same text cut into other events
            for key in sorted(set(a) | set(b)):
                if rechunked is not None and key in ("events", "event_count"):
                    out.extend(rechunked if key == "events" else ())
                    continue
                sub = (*path, key)
                child = inner
                if inner is not None:
                    if inner.kind == "tagged":
                        child = (
                            _Frame("message", len(sub), inner.area, inner.dep, inner.framework, inner.mtype)
                            if key == "value"
                            else _Frame("plain", len(sub), inner.area, inner.dep, inner.framework)
                        )
                    else:
                        child = self._child(inner, key, len(sub))
                if key not in a:
                    self._leaf(ABSENT, b[key], sub, child, out)
                elif key not in b:
                    self._leaf(a[key], ABSENT, sub, child, out)
                else:
                    self._walk(a[key], b[key], sub, child, out)
            return
        if isinstance(a, list) and isinstance(b, list):
            for position in range(max(len(a), len(b))):
                sub = (*path, position)
                child = self._child(frame, position, len(sub)) if frame is not None else None
                if position >= len(a):
                    self._leaf(ABSENT, b[position], sub, child, out)
                elif position >= len(b):
                    self._leaf(a[position], ABSENT, sub, child, out)
                else:
                    self._walk(a[position], b[position], sub, child, out)
            return
        self._leaf(a, b, path, frame, out)

    def _rechunked(
        self, a: dict[str, Any], b: dict[str, Any], path: Path, frame: _Frame
    ) -> list[Difference] | None:
        """Compare two streams (``sse``/``eventstream`` objects) as the text they carry when only their
        chunking differs (:mod:`stepfork.replay.noise.streams`): the differences of their ``events``, all
        noise, ending with one ``stream chunking`` difference; None to compare them event by event (the
        renaming as it was)."""
        events_a, events_b = a.get("events"), b.get("events")
        if not isinstance(events_a, list) or not isinstance(events_b, list) or events_a == events_b:
            return None
        assert self.rules is not None
        left, right = reassemble(events_a, self.rules), reassemble(events_b, self.rules)
        if left is None or right is None or left.chunks == right.chunks:
            return None
        if left.texts != right.texts or len(left.runs) != len(right.runs):
            return None
        saved = dict(self.renaming.forward), dict(self.renaming.backward)
        found: list[Difference] = []
        at = (*path, "events")
        events = self._child(frame, "events", len(at))
        for (index, x), (_, y) in zip(left.runs, right.runs, strict=True):
            self._walk(x, y, (*at, index), self._child(events, index, len(at) + 1), found)
        if any(d.noise is None for d in found):
            self.renaming.forward, self.renaming.backward = saved
            return None
        found.append(Difference(at, describe(left), describe(right), CHUNKING))
        return found

    def _leaf(self, a: Any, b: Any, path: Path, frame: _Frame | None, out: list[Difference]) -> None:
        if frame is None:
            if a is ABSENT or b is ABSENT or not same_leaf(a, b):
                out.append(Difference(path, a, b))
            return
        if isinstance(a, str) and isinstance(b, str):
            if a == b:
                if self._equal_string(a, b, frame):
                    return
                out.append(Difference(path, a, b, at=self.renaming.mismatch(a, b, self._allow(frame))))
                return
        elif a is not ABSENT and b is not ABSENT and same_leaf(a, b):
            made = _made_text(a, b)  # an equal clock reading or drawn number binds to itself, as a string
            if made is None or self.renaming.strings_equal(*made, self._allow(frame)):
                return
            if self._noise(a, b, path, frame) is None:  # renamed to another before; a noise place is noise
                out.append(Difference(path, a, b))
            return
        noise = self._noise(a, b, path, frame)
        at = None
        if noise is None and isinstance(a, str) and isinstance(b, str):
            at = self.renaming.mismatch(a, b, self._allow(frame))
        out.append(Difference(path, a, b, noise, at))

    def _allow(self, frame: _Frame) -> Callable[[str, str], bool]:
        if frame.dep:
            return self._same_form
        return lambda a, b: fresh_pair(self.left, self.right, a, b) and self._same_form(a, b)

    def _same_form(self, a: str, b: str) -> bool:
        """True unless ``a`` or ``b`` holds a clock reading the other does not hold in the same form (unit,
        format, offset: :func:`stepfork.replay.noise.clock.same_clock_forms`; NEWCOMER5 F3)."""
        left = clock_forms(a, self.left.made, self.left.minted)
        right = clock_forms(b, self.right.made, self.right.minted)
        if not left and not right:
            return True
        return same_clock_forms(
            left,
            right,
            self.left.utc_offset,
            self.right.utc_offset,
        )

    def _equal_string(self, a: str, b: str, frame: _Frame) -> bool:
        # an equal string still binds its ids to themselves (and fails where one is renamed to another)
        if len(a) < MIN_NUMBER or not (may_hold_id(a) or _DIGIT_RUN.search(a)):
            return True
        return self.renaming.strings_equal(a, b, self._allow(frame))

    def _noise(self, a: Any, b: Any, path: Path, frame: _Frame) -> str | None:
        rules = self.rules
        assert rules is not None
        rel = path[frame.root :]
        rule = None
        if self._ignore is not None:
            rule = self._ignore_rule(path)
        if rule is None and rel:
            if frame.kind == "headers":
                rule = rules.header_rule(str(rel[0]))
            elif frame.kind == "body":
                rule = rules.body_rule(rule_path(rel))
            elif frame.kind == "message" and frame.mtype is not None:
                rule = rules.message_rule(frame.mtype, rule_path(rel))
        strings = isinstance(a, str) and isinstance(b, str)
        if rule is not None and (frame.dep or not strings):
            if frame.dep:  # a place the dependency generated: its values pair into the renaming
                self._carry(a, b)
            return rule.name
        if strings and self.renaming.strings_equal(a, b, self._allow(frame)):
            return RENAMED
        if _is_number(a) and _is_number(b) and self.renaming.forward.get(_text(a)) == _text(b):
            return RENAMED  # a clock number two aligned dependency outputs held, passed on
        if strings and self.siblings and self._reordered(a, b, frame):
            return SIBLING_ORDER
        if rule is not None:
            # outside a dependency output a rule never excuses an id: a handed-out one must match exactly
            return None if _ids_differ(a, b) else rule.name
        key = path[-1] if path and isinstance(path[-1], str) else None
        in_timing = frame.area in rules.timing_where or frame.kind == "message"
        if (
            key is not None
            and in_timing
            and rules.is_timing_key(key)
            and not any(p in rules.timing_not_under for p in path[:-1])
        ):
            duration = rules.is_duration_key(key)
            if (a is ABSENT or timing_shaped(a, duration_key=duration)) and (
                b is ABSENT or timing_shaped(b, duration_key=duration)
            ):
                if frame.dep:  # the dependency's clock: where the agent passes it on, it is renamed
                    self._carry(a, b)
                return TIMING
        # a reading of each run's clock outside a timing field: a tagged datetime's ISO text, an epoch number
        made = _made_text(a, b)
        if made is not None and self.renaming.strings_equal(*made, self._allow(frame)):
            return RENAMED
        if key is None:
            return None
        if a is ABSENT or b is ABSENT:
            new_where = rules.new_fields_where
            value = b if a is ABSENT else a
            if (
                frame.kind == "message"
                or (frame.area == "llm_output" and "llm_output" in new_where)
                or (frame.framework and "framework_request" in new_where)
            ) and rules.is_empty(value):
                return NEW_FIELD
            if frame.provider and "provider_request" in new_where and rules.is_empty(value, request=True):
                return NEW_FIELD  # an echoed response message's new field (annotations: [])
            if frame.kind == "body" and frame.area == "llm_output" and rules.is_accounting(rule_path(rel)):
                return NEW_FIELD  # a provider's accounting block gained a field (usage.*_details)
        return None

    def _carry(self, a: Any, b: Any) -> None:
        """Pair two values aligned dependency outputs hold at a noise place into the renaming: strings
        (their ids, and the whole value wherever it is passed on), and clock numbers (an epoch time, as
        the text an agent formats it into); other numbers are too short to tell apart from data."""
        if isinstance(a, str) and isinstance(b, str):
            self.renaming.pair(a, b)
        elif _is_number(a) and _is_number(b) and is_epoch(a) and is_epoch(b):
            self.renaming.pair(_text(a), _text(b))

    def _reordered(self, a: str, b: str, frame: _Frame) -> bool:
        allow = self._allow(frame)

        def equal(left: str, right: str, bind: bool) -> bool:
            return self.renaming.strings_equal(left, right, allow, bind=bind)

        return any(group.reordered(a, b, equal) for group in self.siblings)

    def _ignore_rule(self, path: Path) -> Rule | None:
        assert self._ignore is not None
        return self._ignore(rule_path(path))

    # -- reading the scope -------------------------------------------------------------------------------

    def renamed(self) -> list[tuple[str, str]]:
        """The ids renamed so far in this scope (left id, right id), in the order they were bound."""
        return self.renaming.renamed()


_EPOCH_DIGITS = frozenset({10, 13, 16, 19})  # seconds, ms, us, ns: the clock's epoch lengths
_SHORTEST_NUMBER = 10 ** (MIN_NUMBER - 1)  # the smallest integer that may be a drawn number
_DIGIT_RUN = re.compile(rf"[0-9]{{{MIN_NUMBER}}}")  # a string that may hold a drawn number


def _made_text(a: Any, b: Any) -> tuple[str, str] | None:
    """The texts to compare up to the renaming of two values that are not strings but may hold a reading
    of the run's clock or a number it drew (docs/decisions.md): two tagged datetimes (``{"$stepfork":
    "datetime", "value": ISO}``, a ``datetime`` object the run returned), their ISO strings; two numbers of
    one type whose integer part has the same epoch length (``time.time()``, ``int(time.time() * 1000)``),
    as Python writes them; two other integers of :data:`~stepfork.trace.minting.MIN_NUMBER` digits or more
    (``SystemRandom().randint(100000, 999999)`` sent as a number), their decimal text. Whether the text is a
    clock reading inside the run or minted, and not handed out, is the renaming's to say (a constant in the
    code is neither: compared exactly); None for any other pair."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.get(TAG) == b.get(TAG) == "datetime" and a.keys() == b.keys() == {TAG, "value"}:
            left, right = a["value"], b["value"]
            if isinstance(left, str) and isinstance(right, str):
                return left, right
        return None
    if not _is_number(a) or type(a) is not type(b):
        return None
    if _epoch_length(a) and _epoch_length(b):
        if len(str(int(a))) != len(str(int(b))):
            return None  # seconds and milliseconds are two units, not one reading (NEWCOMER5 F3)
        return _text(a), _text(b)
    if type(a) is int and a >= _SHORTEST_NUMBER and b >= _SHORTEST_NUMBER:
        return str(a), str(b)
    return None


def _epoch_length(number: float) -> bool:
    return number >= 0 and len(str(int(number))) in _EPOCH_DIGITS and "e" not in _text(number)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(number: float) -> str:
    """A number as Python's ``str`` (and ``json.dumps``) writes it: how an agent passes it on."""
    return repr(number)


def _ids_differ(a: str, b: str) -> bool:
    """True when two strings differ in an opaque id (or in their token structure around one)."""
    left, right = split(a)[1], split(b)[1]
    if len(left) != len(right):
        return any(is_opaque_id(t) for t in (*left, *right))
    return any(x != y and (is_opaque_id(x) or is_opaque_id(y)) for x, y in zip(left, right, strict=True))


def _is_request(value: Any) -> bool:
    """True for the input of an LLM API call as the HTTP capture records it: ``{"method", "path" | "url",
    "body", ...}`` (an ``http`` call's input when the diff reads it as an LLM call)."""
    return (
        isinstance(value, dict)
        and "method" in value
        and "body" in value
        and ("path" in value or "url" in value)
    )


def _is_http(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "status" in value
        and "headers" in value
        and any(k in value for k in _HTTP_BODIES)
    )
