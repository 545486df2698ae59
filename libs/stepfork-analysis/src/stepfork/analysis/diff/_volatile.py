"""Volatile values of ``diff`` (issue 12), now the noise rules of :mod:`stepfork.replay.noise` (issue 28).

Kept importable because docs/diff.md documented it: ``VOLATILE_PATHS`` is derived from the shipped rules
data (``stepfork/replay/noise/rules.toml``: per SDK, each rule's paths relative to where it applies,
``body:id``, ``headers:x-request-id``, ``message:AIMessage:id``); the path-pattern checks of ``--ignore``
live here, and :func:`user_ignore` turns ``--ignore`` patterns into the rule the comparison asks.

Patterns are the diff's paths (``output.json.choices[0].message.tool_calls[1].id``) with ``[*]`` for any
list index, ``*`` for one key and ``**`` for any run of keys and indices.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from stepfork.replay.noise.rules import NoiseRules, Rule, compile_pattern, pattern_problem


def _volatile_paths() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for rule in NoiseRules.shipped().rules:
        place = rule.where if rule.where != "message" else f"message:{'|'.join(rule.types)}"
        table.setdefault(rule.sdk or rule.name, []).extend(f"{place}:{p}" for p in rule.paths)
    return {sdk: tuple(paths) for sdk, paths in table.items()}


VOLATILE_PATHS: dict[str, tuple[str, ...]] = _volatile_paths()
"""Per SDK, the shipped rules' paths as ``PLACE:PATH`` (derived from the rules data; read-only)."""

path_pattern_problem = pattern_problem
"""Why a pattern cannot be a diff path pattern, or None (stepfork.replay.noise.rules.pattern_problem)."""

IGNORE_RULE = Rule(name="--ignore", where="body", paths=("**",), reason="a path the user ignored")
"""The rule an ``--ignore`` pattern stands for in a difference's ``noise``."""


def check_path_patterns(patterns: Iterable[str]) -> None:
    """Raise ValueError (``invalid ignore path 'bad[': ...``) for the first of ``patterns`` that
    :func:`path_pattern_problem` refuses."""
    for pattern in patterns:
        problem = path_pattern_problem(pattern)
        if problem is not None:
            raise ValueError(f"invalid ignore path {pattern!r}: {problem}")


def user_ignore(patterns: Iterable[str]) -> Callable[[str], Rule | None] | None:
    """The ``--ignore`` patterns as the comparison's ``ignore`` hook: given a difference's full diff path
    (``output.json.id``), :data:`IGNORE_RULE` when a pattern matches it, else None; None for no pattern.

    Raises:
        ValueError: a pattern :func:`check_path_patterns` refuses.
    """
    patterns = tuple(patterns)
    check_path_patterns(patterns)
    if not patterns:
        return None
    compiled = re.compile("|".join(f"(?:{compile_pattern(p)})" for p in patterns))
    return lambda path: IGNORE_RULE if compiled.fullmatch(path) else None


class IgnoreRules:
    """Kept for code written against issue 12: ``defaults`` (the noise rules) and ``extra`` patterns.

    ``ignores(step_type, path)`` answers for the ``extra`` patterns only (the noise rules need the values
    and where they sit: :class:`stepfork.replay.noise.Comparison`).
    """

    def __init__(self, *, defaults: bool = True, extra: Iterable[str] = ()) -> None:
        self.patterns = tuple(extra)
        self.defaults = defaults
        self._hook = user_ignore(self.patterns)

    def ignores(self, step_type: str, path: str) -> bool:
        """True when an ``extra`` pattern matches ``path``."""
        return self._hook is not None and self._hook(path) is not None


NO_RULES = IgnoreRules(defaults=False)
"""Ignore nothing (``--strict``)."""
