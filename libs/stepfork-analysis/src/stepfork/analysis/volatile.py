"""Volatile values: what a provider generates anew on every run, which ``diff`` ignores by default (issue 12).

Two recordings of the same code against a real provider differ in response ids, ``created`` timestamps,
tool-call ids (and every place the next request echoes them), ``system_fingerprint``, request-id and
rate-limit headers and timing. None of them is behaviour. ``diff`` leaves differences at these paths out of
its verdict, counts them, and shows them with ``--show-ignored``; ``--ignore PATH`` adds paths, ``--strict``
ignores nothing. The table (docs/diff.md, "Volatile values") is kept per provider; the patterns are
specific to each provider's shapes, and every LLM step is checked against all of them, because a framework
(pydantic-ai, LangChain) records its own message shapes whatever model it talks to.

Patterns are the diff's paths (``output.choices[0].message.tool_calls[1].id``) with ``[*]`` for any list
index, ``*`` for one key and ``**`` for any run of keys and indices.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from stepfork.replay.ignoring import compile_path_pattern

VOLATILE_PATHS: dict[str, tuple[str, ...]] = {
    "openai": (
        "output.id",
        "output.created",
        "output.system_fingerprint",
        "output.**.tool_calls[*].id",
        "output.**.usage.**_time",
        "input.**.tool_calls[*].id",
        "input.**.tool_call_id",
        "output.**.headers.x-request-id",
        "output.**.headers.x-ratelimit-*",
        "output.**.headers.openai-processing-ms",
        "output.**.headers.date",
    ),
    "anthropic": (
        "output.id",
        "output.content[*].id",
        "input.**.content[*].id",
        "input.**.tool_use_id",
        "output.**.headers.request-id",
        "output.**.headers.anthropic-ratelimit-*",
        "output.**.headers.date",
    ),
    "langchain": (
        "output.id",
        "output.**.tool_calls[*].id",
        "output.**.tool_call_chunks[*].id",
        "output.response_metadata.**",
        "input.**.messages[*].id",
        "input.**.tool_calls[*].id",
        "input.**.tool_call_id",
        "input.**.response_metadata.**",
    ),
    "pydantic-ai": (
        "output.timestamp",
        "output.provider_response_id",
        "output.parts[*].tool_call_id",
        "output.parts[*].id",
        "input.**.timestamp",
        "input.**.provider_response_id",
        "input.**.tool_call_id",
        "input.**.parts[*].id",
    ),
}
"""Paths of LLM steps ignored by default, per provider (docs/diff.md, "Volatile values")."""


_BRACKETS = re.compile(r"\[(?:\*|\d+)\]")


def path_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a diff path pattern, or None. A ``[`` or ``]`` outside ``[*]`` / ``[N]``
    (``output.choices[0``, ``bad[``) would only ever match itself literally: a typo that ignores
    nothing, which the user would never see."""
    if not pattern:
        return "an empty path"
    rest = _BRACKETS.sub("", pattern)
    if "[" in rest or "]" in rest:
        return "a '[' must be part of [*] (any index) or [N] (index N), as in output.choices[*].message"
    return None


def check_path_patterns(patterns: Iterable[str]) -> None:
    """Raise ValueError (``invalid ignore path 'bad[': ...``) for the first of ``patterns`` that
    :func:`path_pattern_problem` refuses."""
    for pattern in patterns:
        problem = path_pattern_problem(pattern)
        if problem is not None:
            raise ValueError(f"invalid ignore path {pattern!r}: {problem}")


class IgnoreRules:
    """Which diff paths to ignore: the default table for LLM steps and the user's paths for every step.

    Args:
        defaults: apply :data:`VOLATILE_PATHS` to LLM steps (``--strict`` turns this off).
        extra: more patterns (``--ignore PATH``), applied to every step; ignored too under ``strict``.

    Raises:
        ValueError: a pattern of ``extra`` that :func:`path_pattern_problem` refuses.
    """

    def __init__(self, *, defaults: bool = True, extra: Iterable[str] = ()) -> None:
        self.patterns = tuple(extra)
        check_path_patterns(self.patterns)
        table = VOLATILE_PATHS.values() if defaults else ()
        self._llm = tuple(compile_path_pattern(p) for paths in table for p in paths)
        self._all = tuple(compile_path_pattern(p) for p in self.patterns)

    def ignores(self, step_type: str, path: str) -> bool:
        """True when a difference at ``path`` of a step of ``step_type`` is to be ignored."""
        # an http step's response carries the provider's headers too (date, request ids): the same table
        if step_type in ("llm", "http") and any(p.fullmatch(path) for p in self._llm):
            return True
        return any(p.fullmatch(path) for p in self._all)


NO_RULES = IgnoreRules(defaults=False)
"""Ignore nothing (``--strict``)."""
