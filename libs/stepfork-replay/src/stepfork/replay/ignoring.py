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
from stepfork.replay.noise.rules import compile_pattern
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


def normalize_ignore(ignore: Mapping[str, Iterable[str]] | None) -> dict[str, tuple[re.Pattern[str], ...]]:
    """``{label: [paths]}`` checked and compiled.

    Raises:
        ValueError: a label that is not a non-empty string, or a path that does not start with ``$``.
    """
    compiled: dict[str, tuple[re.Pattern[str], ...]] = {}
    for label, paths in (ignore or {}).items():
        if not isinstance(label, str) or not label:
            raise ValueError(f"ignore keys must be call labels (tool names, provider/model), got {label!r}")
        if isinstance(paths, str):
            paths = [paths]
        patterns = []
        for path in paths:
            if not isinstance(path, str) or not path.startswith("$"):
                raise ValueError(
                    f"ignore[{label!r}]: a path must be a JSON path starting with '$', got {path!r}"
                )
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
