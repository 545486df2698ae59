"""Ignored input paths of matching: ``ReplaySession(ignore={"tool": ["$.requested_at"]})`` (issue 12).

A tool input may hold a value the agent makes anew on every run (a clock reading, a random id): replay
would report a divergence at every run. ``ignore`` names such paths per call label (a tool name, or an
LLM's ``provider/model``), as JSON paths with ``[*]`` for any list index, ``*`` for one key and ``**`` for
any run of keys and indices. An input differing *only* at ignored paths matches; the call is served as
recorded and each ignored difference is reported (``ReplaySession.ignored_differences``, the CLI's
"Ignored" lines), never silently. Any other difference is a divergence at its first non-ignored path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stepfork.replay.diagnostics import MISSING
from stepfork.replay.noise.rules import compile_pattern, pattern_problem
from stepfork.trace.canonical import json_path_child


@dataclass(frozen=True, slots=True)
class IgnoredDifference:
    """A difference matching accepted because its path is ignored.

    Attributes: ``index`` (0-based recorded call), ``step``, ``label``, ``path`` (``$.requested_at``),
    ``expected``/``actual`` (the recorded and live values, redacted JSON; MISSING when absent), ``reason``
    (``--ignore``: a path the user ignored; ``renamed id``: a value the replay minted where the recording
    had the value it minted, ``stepfork.replay.noise``).
    """

    index: int
    step: int
    label: str
    path: str
    expected: Any
    actual: Any
    reason: str = "--ignore"

    def to_dict(self) -> dict[str, Any]:
        """``{index, step, label, path, reason}`` (values are not repeated: a clock or a random id)."""
        return {
            "index": self.index,
            "step": self.step,
            "label": self.label,
            "path": self.path,
            "reason": self.reason,
        }


def compile_path_pattern(pattern: str) -> re.Pattern[str]:
    """A path pattern as a regular expression: ``**`` any run of characters, ``[*]`` any list index,
    ``*`` any run within one key; everything else literal. One syntax for replay's ``ignore``, the diff's
    ``--ignore`` and the noise rules (stepfork.replay.noise.rules.compile_pattern)."""
    return re.compile(compile_pattern(pattern))


def path_problem(path: object) -> str | None:
    """Why ``path`` cannot be an ignored JSON path, or None: not a string starting with ``$``, or a ``[``
    / ``]`` outside ``[*]`` / ``[N]`` (``$.[``, ``$.items[x]``: it could only match itself, a typo that
    would silently ignore nothing; the rule of ``diff --ignore``)."""
    if not isinstance(path, str) or not path.startswith("$"):
        return "a path must be a JSON path starting with '$'"
    if pattern_problem(path) is not None:
        return "a '[' must be part of [*] (any index) or [N] (index N), as in $.items[*].id"
    return None


def check_output_paths(paths: Iterable[str] | None) -> list[str]:
    """``paths`` (JSON paths of the run's output not compared: ``ignore_output``, ``--ignore PATH``) as a
    list, checked.

    Raises:
        ValueError: one line naming the first path :func:`path_problem` refuses.
    """
    checked = list(paths or ())
    for path in checked:
        problem = path_problem(path)
        if problem is not None:
            raise ValueError(f"invalid ignore path {path!r}: {problem}")
    return checked


def check_ignore_labels(ignore: Mapping[str, Any] | None, labels: Iterable[str]) -> None:
    """Refuse an ``ignore`` label that names no recorded call (``labels``: the recording's tool names,
    ``provider/model`` and ``http METHOD URL`` labels): a typo would ignore nothing, silently (NEWCOMER
    finding 13).

    Raises:
        ValueError: one line naming the unknown label and the calls the recording holds; for ``run``, how
            a path of the run's output is given (a path alone: ``$.generated_at``).
    """
    known = set(labels)
    unknown = sorted(label for label in (ignore or {}) if label not in known)
    if not unknown:
        return
    held = sorted(known)
    shown = ", ".join(held[:10]) + (f" and {len(held) - 10} more" if len(held) > 10 else "")
    line = f"ignore names a call the recording does not hold: {unknown[0]!r}; " + (
        f"its calls are {shown}" if held else "it holds no call"
    )
    if unknown[0] in ("run", "output"):
        given = (ignore or {})[unknown[0]]
        path = given if isinstance(given, str) else next(iter(given), "$.PATH")
        line += f"; a path of the run's output is given alone: --ignore '{path}'"
    raise ValueError(line)


def normalize_ignore(ignore: Mapping[str, Iterable[str]] | None) -> dict[str, tuple[re.Pattern[str], ...]]:
    """``{label: [paths]}`` checked and compiled.

    Raises:
        ValueError: a label that is not a non-empty string, or a path :func:`path_problem` refuses (not
            starting with ``$``, or a stray ``[``).
    """
    compiled: dict[str, tuple[re.Pattern[str], ...]] = {}
    for label, paths in (ignore or {}).items():
        if not isinstance(label, str) or not label:
            raise ValueError(f"ignore keys must be call labels (tool names, provider/model), got {label!r}")
        if isinstance(paths, str):
            paths = [paths]
        patterns = []
        for path in paths:
            problem = path_problem(path)
            if problem is not None:
                raise ValueError(f"ignore[{label!r}]: invalid path {path!r}: {problem}")
            patterns.append(compile_path_pattern(path))
        compiled[label] = tuple(patterns)
    return compiled


def all_differences(expected: Any, actual: Any, path: str = "$") -> list[tuple[str, Any, Any]]:
    """Every leaf difference between two JSON values: ``[(path, expected, actual)]`` (MISSING when absent)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(expected) | set(actual)):
            sub = json_path_child(path, key)
            if key not in expected:
                out.append((sub, MISSING, actual[key]))
            elif key not in actual:
                out.append((sub, expected[key], MISSING))
            else:
                out.extend(all_differences(expected[key], actual[key], sub))
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        out = []
        for position in range(max(len(expected), len(actual))):
            sub = json_path_child(path, position)
            if position >= len(expected):
                out.append((sub, MISSING, actual[position]))
            elif position >= len(actual):
                out.append((sub, expected[position], MISSING))
            else:
                out.extend(all_differences(expected[position], actual[position], sub))
        return out
    if type(expected) is type(actual) and expected == actual:
        return []
    return [(path, expected, actual)]


def split_ignored(
    patterns: tuple[re.Pattern[str], ...], expected: Any, actual: Any
) -> tuple[list[tuple[str, Any, Any]], list[tuple[str, Any, Any]]]:
    """``(ignored, remaining)`` differences between the recorded and live inputs."""
    ignored: list[tuple[str, Any, Any]] = []
    remaining: list[tuple[str, Any, Any]] = []
    for found in all_differences(expected, actual):
        (ignored if any(p.fullmatch(found[0]) for p in patterns) else remaining).append(found)
    return ignored, remaining
