"""The noise rules as objects: the shipped ``rules.toml`` and a user's rules file, checked and compiled.

:class:`NoiseRules` answers the questions the comparison (:mod:`stepfork.replay.noise.compare`) asks at a
difference: does a path rule name this place (``body``, ``headers`` or a ``message`` type), is it a timing
field, is it a new SDK field with an empty default, and which framework message a plain dict is. The data
format is documented in ``rules.toml`` itself and in docs/diff.md ("Noise rules").
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from stepfork.replay.noise.data import shipped

WHERE = ("body", "headers", "message")
"""Where a ``[[rule]]`` applies (``rules.toml``)."""

_BRACKETS = re.compile(r"\[(?:\*|\d+)\]")


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``[[rule]]``: ``name``, ``sdk``, ``where`` (:data:`WHERE`), ``types`` (for ``message``),
    ``paths`` (patterns relative to that place), ``reason`` and ``example``."""

    name: str
    where: str
    paths: tuple[str, ...]
    reason: str
    sdk: str = ""
    types: tuple[str, ...] = ()
    example: str = ""


@dataclass(frozen=True, slots=True)
class MessageShape:
    """A framework message recognised in plain form: ``type``, all of ``match`` equal, all of ``has``."""

    type: str
    match: tuple[tuple[str, Any], ...]
    has: tuple[str, ...]


def compile_pattern(pattern: str) -> str:
    """A path pattern as a regular expression's source: ``**`` any run of characters, ``[*]`` any list
    index, ``*`` any run within one key; everything else literal (the syntax of ``--ignore``)."""
    out = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**", index):
            out.append(r".*")
            index += 2
        elif pattern.startswith("[*]", index):
            out.append(r"\[\d+\]")
            index += 3
        elif pattern[index] == "*":
            out.append(r"[^.\[]*")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return "".join(out)


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a path pattern, or None: an empty string, or a ``[`` / ``]`` outside
    ``[*]`` / ``[N]`` (it could only match itself: a typo that ignores nothing, unseen)."""
    if not pattern:
        return "an empty path"
    rest = _BRACKETS.sub("", pattern)
    if "[" in rest or "]" in rest:
        return "a '[' must be part of [*] (any index) or [N] (index N), as in output.choices[*].message"
    return None


class _Matcher:
    """Rules' paths compiled into one alternation (one ``fullmatch`` per question), the rule found after."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._rules = [(re.compile(compile_pattern(p)), rule) for rule in rules for p in rule.paths]
        source = "|".join(f"(?:{compile_pattern(p)})" for rule in rules for p in rule.paths)
        self._any = re.compile(source) if source else None

    def find(self, path: str) -> Rule | None:
        if self._any is None or self._any.fullmatch(path) is None:
            return None
        return next(rule for pattern, rule in self._rules if pattern.fullmatch(path))


def _strings(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: '{key}' must be a list of strings")
    return tuple(value)


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = data.get(key, "" if not required else None)
    if not isinstance(value, str) or (required and not value):
        raise ValueError(f"{where}: '{key}' must be a non-empty string")
    return value


def parse_rules(data: Mapping[str, Any], *, source: str) -> list[Rule]:
    """The ``[[rule]]`` tables of ``data`` (a parsed rules file named ``source`` in messages).

    Raises:
        ValueError: a table without ``name``/``where``/``paths``/``reason``, an unknown ``where``, a
            ``message`` rule without ``types``, or a path :func:`pattern_problem` refuses.
    """
    tables = data.get("rule", [])
    if not isinstance(tables, list):
        raise ValueError(f"{source}: 'rule' must be an array of tables ([[rule]])")
    rules = []
    for number, table in enumerate(tables, 1):
        where = f"{source}: rule {number}"
        if not isinstance(table, dict):
            raise ValueError(f"{where}: not a table")
        name = _text(table, "name", where)
        where = f"{source}: rule {name!r}"
        place = _text(table, "where", where)
        if place not in WHERE:
            raise ValueError(f"{where}: 'where' must be one of {', '.join(WHERE)}, got {place!r}")
        paths = _strings(table, "paths", where)
        if not paths:
            raise ValueError(f"{where}: 'paths' is empty")
        for path in paths:
            problem = pattern_problem(path)
            if problem is not None:
                raise ValueError(f"{where}: invalid path {path!r}: {problem}")
        types = _strings(table, "types", where)
        if place == "message" and not types:
            raise ValueError(f"{where}: a 'message' rule names its message 'types'")
        rules.append(
            Rule(
                name=name,
                where=place,
                paths=paths,
                reason=_text(table, "reason", where),
                sdk=_text(table, "sdk", where, required=False),
                types=types,
                example=_text(table, "example", where, required=False),
            )
        )
    return rules


def read_rules_file(path: str | Path) -> list[Rule]:
    """The ``[[rule]]`` tables of a user's rules file (TOML, the format of the shipped ``rules.toml``).

    Raises:
        ValueError: the file cannot be read, is not TOML, or a rule is malformed (one line naming it).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the noise rules file {path}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"the noise rules file {path} is not TOML: {exc}") from None
    unknown = sorted(set(data) - {"rule", "schema"})
    if unknown:
        raise ValueError(f"{path}: unknown table(s) {', '.join(unknown)}; a rules file holds [[rule]] tables")
    return parse_rules(data, source=str(path))


class NoiseRules:
    """The rules a comparison applies (the shipped ones, plus a user's).

    Build with :meth:`shipped` or :meth:`with_files`; :data:`STRICT` (None) means no rules at all.

    Attributes:
        rules: every ``[[rule]]``, shipped first.
    """

    def __init__(self, data: Mapping[str, Any], extra: Iterable[Rule] = ()) -> None:
        self.rules: tuple[Rule, ...] = (*parse_rules(data, source="rules.toml"), *extra)
        timing = data["timing"]
        self.timing_reason: str = timing["reason"]
        self._timing_keys = re.compile("|".join(fnmatch.translate(k) for k in timing["keys"]))
        self._duration_keys = re.compile("|".join(fnmatch.translate(k) for k in timing["duration_keys"]))
        self.timing_where = frozenset(timing["where"])
        self.timing_not_under = frozenset(timing["not_under"])
        self.ids_reason: str = data["ids"]["reason"]
        self.new_fields_reason: str = data["new_fields"]["reason"]
        self.new_fields_where = frozenset(data["new_fields"]["where"])
        self._empty = _json_values(data["new_fields"]["empty"], "new_fields.empty")
        self._request_empty = _json_values(data["new_fields"]["request_empty"], "new_fields.request_empty")
        self.accounting_reason: str = data["new_fields"].get("accounting_reason", "")
        accounting = [
            Rule("accounting", "body", (path,), self.accounting_reason)
            for path in data["new_fields"].get("accounting", ())
        ]
        self._accounting = _Matcher(accounting)
        streams = data.get("streams", {})
        self._deltas = _Matcher([Rule("stream", "body", tuple(streams.get("deltas", ())), "")])
        self.stream_indexes: tuple[str, ...] = tuple(streams.get("indexes", ()))
        self.stream_counters = frozenset(streams.get("counters", ()))
        self.messages = tuple(
            MessageShape(m["type"], tuple(sorted(m.get("match", {}).items())), tuple(m.get("has", ())))
            for m in data.get("message", [])
        )
        self._shape_keys = frozenset(k for m in self.messages for k, _ in m.match)
        self._body = _Matcher([r for r in self.rules if r.where == "body"])
        self._headers = _Matcher([r for r in self.rules if r.where == "headers"])
        types = {t for r in self.rules if r.where == "message" for t in r.types}
        self.message_types: frozenset[str] = frozenset(
            {*types, *data.get("framework", {}).get("types", ()), *(m.type for m in self.messages)}
        )
        """Framework message classes: a tagged object of one of these types is a message."""
        self._messages = {
            t: _Matcher([r for r in self.rules if r.where == "message" and t in r.types]) for t in types
        }

    @classmethod
    def shipped(cls) -> NoiseRules:
        """The rules of the shipped ``rules.toml`` (cached)."""
        return _shipped_rules()

    @classmethod
    def with_files(cls, files: Iterable[str | Path]) -> NoiseRules:
        """The shipped rules plus the ``[[rule]]`` tables of each of ``files`` (:func:`read_rules_file`)."""
        extra = [rule for path in files for rule in read_rules_file(path)]
        return cls(shipped(), extra) if extra else _shipped_rules()

    def body_rule(self, path: str) -> Rule | None:
        """The rule naming ``path`` of an LLM response body (``choices[0].message.tool_calls[1].id``)."""
        return self._body.find(path)

    def header_rule(self, name: str) -> Rule | None:
        """The rule naming the response header ``name`` (lower case)."""
        return self._headers.find(name)

    def message_rule(self, message_type: str, path: str) -> Rule | None:
        """The rule naming ``path`` inside a framework message of ``message_type`` (``AIMessage``)."""
        matcher = self._messages.get(message_type)
        return matcher.find(path) if matcher is not None else None

    def is_empty(self, value: Any, *, request: bool = False) -> bool:
        """True when ``value`` is an empty default a new SDK field may have (``[new_fields] empty``: null,
        false, [], {}); with ``request``, one a provider reads as the key's absence (``request_empty``:
        null, [], {}; never false, whose absence may mean true)."""
        if value is not None and value is not False and not (isinstance(value, list | dict) and not value):
            return False  # the cheap test first: only null, false, [] and {} can be listed
        return _canonical(value) in (self._request_empty if request else self._empty)

    def is_accounting(self, path: str) -> bool:
        """True when ``path`` of an LLM response body is in a provider's accounting block or service
        metadata (``[new_fields] accounting``: ``usage.**``, ``service_tier``...), where a key one side
        lacks is noise whatever its value."""
        return self._accounting.find(path) is not None

    def is_stream_delta(self, path: str) -> bool:
        """True when ``path`` of a stream event's JSON holds a text delta (``[streams] deltas``)."""
        return self._deltas.find(path) is not None

    def is_timing_key(self, key: str) -> bool:
        """True for a timing-named key (``[timing] keys``)."""
        return self._timing_keys.fullmatch(key) is not None

    def is_duration_key(self, key: str) -> bool:
        """True for a duration-named key (``[timing] duration_keys``)."""
        return self._duration_keys.fullmatch(key) is not None

    def message_type(self, value: dict[str, Any]) -> str | None:
        """The framework message type of a plain dict (``[[message]]``), or None."""
        if not any(key in value for key in self._shape_keys):
            return None
        for shape in self.messages:
            if all(value.get(k) == v for k, v in shape.match) and all(k in value for k in shape.has):
                return shape.type
        return None


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _json_values(texts: Any, where: str) -> frozenset[str]:
    """The JSON texts of ``texts`` (``["null", "[]"]``) in canonical form.

    Raises:
        ValueError: ``texts`` is not a list of JSON texts.
    """
    if not isinstance(texts, list):
        raise ValueError(f"rules.toml: {where} must be a list of JSON texts")
    try:
        return frozenset(_canonical(json.loads(text)) for text in texts)
    except (TypeError, ValueError):
        raise ValueError(f"rules.toml: {where} must be a list of JSON texts") from None


@lru_cache(maxsize=1)
def _shipped_rules() -> NoiseRules:
    return NoiseRules(shipped())
