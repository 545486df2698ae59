"""Trajectory assertions on a finished replay (spec replay.txt, "Trajectory assertions";
interop/REFERENCE-API.md ``stepfork.assertions``).

Every assertion first fails when the replay diverged (``stepfork replay diverged: ...``, even if the agent
caught the error) or is incomplete (``stepfork replay incomplete: ...``), then looks at the calls actually
reached (``replay.executed_calls``); failed tool calls count. Messages say what was expected and what was
seen. Misused arguments (a negative count, an unknown trajectory key) raise ValueError, not AssertionError.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from stepfork.replay.errors import ReplayError, ReplayMismatchError
from stepfork.trace.canonical import canonical_json
from stepfork.trace.jsonable import to_jsonable
from stepfork.trace.redaction import redact_json

__all__ = [
    "assert_max_steps",
    "assert_tool_arguments",
    "assert_tool_call_count",
    "assert_tool_called",
    "assert_tool_not_called",
    "assert_tool_order",
    "assert_tool_sequence",
    "assert_trajectory",
    "validate_trajectory_expectation",
]

TRAJECTORY_KEYS = frozenset(
    {"called", "not_called", "counts", "arguments", "order", "sequence", "strict_sequence", "max_steps"}
)


class _Call(Protocol):
    kind: str
    label: str
    input: Any


class _Replay(Protocol):
    @property
    def divergence(self) -> ReplayError | None: ...

    @property
    def executed_calls(self) -> Sequence[Any]: ...

    def verify_complete(self) -> None: ...


def _require_valid(replay: _Replay) -> None:
    if replay.divergence is not None:
        raise AssertionError(f"stepfork replay diverged: {replay.divergence}")
    try:
        replay.verify_complete()
    except ReplayMismatchError as exc:
        raise AssertionError(f"stepfork replay incomplete: {exc}") from exc


def _tools(replay: _Replay) -> list[_Call]:
    _require_valid(replay)
    return [call for call in replay.executed_calls if call.kind == "tool"]


def _names(replay: _Replay) -> list[str]:
    return [call.label for call in _tools(replay)]


def _count(value: Any, what: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {value!r}")
    return value


def _name(value: Any, what: str = "tool name") -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def assert_tool_called(replay: _Replay, name: str) -> None:
    """Assert that tool ``name`` was reached at least once. Raises AssertionError listing the calls seen."""
    names = _names(replay)
    if _name(name) not in names:
        raise AssertionError(f"expected tool {name!r} to be called; actual: {names}")


def assert_tool_not_called(replay: _Replay, name: str) -> None:
    """Assert that tool ``name`` was never reached. Raises AssertionError with the calls seen."""
    names = _names(replay)
    if _name(name) in names:
        raise AssertionError(f"expected tool {name!r} not to be called; actual: {names}")


def assert_tool_call_count(replay: _Replay, name: str, count: int) -> None:
    """Assert that tool ``name`` was reached exactly ``count`` times.

    Raises:
        ValueError: ``count`` is not an int >= 0 (bools are rejected).
        AssertionError: another count was seen.
    """
    expected = _count(count, "count")
    names = _names(replay)
    seen = names.count(_name(name))
    if seen != expected:
        raise AssertionError(
            f"expected tool {name!r} to be called {expected} time(s); actual: {seen} in {names}"
        )


def _json(value: Any) -> Any:
    return redact_json(to_jsonable(value)).value


def assert_tool_arguments(
    replay: _Replay, name: str, arguments: Any, *, occurrence: int | None = None
) -> None:
    """Assert the input of tool ``name``: canonical equality of the redacted JSON of ``arguments``.

    Args:
        arguments: the expected bound input (a dict of argument names to values; defaults included, as
            recorded).
        occurrence: 1-based occurrence of the tool to check; None: any occurrence may match.

    Raises:
        ValueError: ``occurrence`` is not an int >= 1.
        AssertionError: no (such) occurrence, or different arguments (expected and actual shown).
    """
    if occurrence is not None:
        _count(occurrence, "occurrence", minimum=1)
    expected = _json(arguments)
    expected_bytes = canonical_json(expected)
    inputs = [call.input for call in _tools(replay) if call.label == _name(name)]
    if occurrence is None:
        if any(canonical_json(value) == expected_bytes for value in inputs):
            return
        raise AssertionError(
            f"expected arguments {_show(expected)} for tool {name!r}; actual: {[_show(v) for v in inputs]}"
        )
    if occurrence > len(inputs):
        raise AssertionError(
            f"expected arguments for occurrence {occurrence} of tool {name!r}; "
            f"it was called {len(inputs)} time(s)"
        )
    actual = inputs[occurrence - 1]
    if canonical_json(actual) != expected_bytes:
        raise AssertionError(
            f"expected arguments {_show(expected)} for occurrence {occurrence} of tool {name!r}; "
            f"actual: {_show(actual)}"
        )


def _show(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def assert_tool_order(replay: _Replay, before: str, after: str) -> None:
    """Assert that some call of ``after`` comes after some call of ``before`` (other tools may be between)."""
    names = _names(replay)
    first = names.index(_name(before)) if before in names else None
    if first is None or _name(after) not in names[first + 1 :]:
        raise AssertionError(f"expected tool {before!r} before tool {after!r}; actual: {names}")


def _is_subsequence(wanted: Sequence[str], names: Sequence[str]) -> bool:
    iterator = iter(names)
    return all(any(name == item for item in iterator) for name in wanted)


def assert_tool_sequence(replay: _Replay, sequence: Iterable[str], *, strict: bool = True) -> None:
    """Assert the tool calls: exactly ``sequence`` (default), or with ``strict=False`` an ordered
    subsequence (other tools may come between and around the named ones)."""
    wanted = [_name(item) for item in sequence]
    names = _names(replay)
    ok = names == wanted if strict else _is_subsequence(wanted, names)
    if not ok:  # the earlier implementation's words ("exact tool sequence"; issue 32)
        if strict:
            raise AssertionError(f"expected the exact tool sequence {wanted}; actual: {names}")
        raise AssertionError(
            f"expected tool sequence {wanted} in order (others allowed between); actual: {names}"
        )


def assert_max_steps(replay: _Replay, maximum: int) -> None:
    """Assert that at most ``maximum`` instrumented calls (tools and LLMs) were reached.

    Raises ValueError for a ``maximum`` that is not an int >= 0; AssertionError when exceeded.
    """
    limit = _count(maximum, "maximum")
    _require_valid(replay)
    steps = len(replay.executed_calls)
    if steps > limit:
        labels = [call.label for call in replay.executed_calls]
        raise AssertionError(f"expected at most {limit} steps (tool and LLM calls); actual: {steps} {labels}")


def _name_list(value: Any, key: str) -> list[str]:
    if not isinstance(value, list):
        raise ValueError(f"trajectory expectation {key!r} must be a list of tool names, got {value!r}")
    return [_name(item, f"{key} entry") for item in value]


def validate_trajectory_expectation(expectation: Any) -> dict[str, Any]:
    """Check the shape of a reviewed trajectory expectation and return it as a plain dict.

    Keys (all optional): ``called``, ``not_called``, ``sequence`` (lists of tool names), ``counts``
    ({name: int >= 0}), ``arguments`` ([{"name", "value", "occurrence"?}]), ``order`` ([[before, after]]),
    ``strict_sequence`` (bool, default true; only with ``sequence``), ``max_steps`` (int >= 0).

    Raises:
        ValueError: not a mapping, an unknown key, or a value of the wrong shape (the message names it).
    """
    if not isinstance(expectation, Mapping):
        raise ValueError(f"a trajectory expectation must be a JSON object, got {type(expectation).__name__}")
    unknown = sorted(set(expectation) - TRAJECTORY_KEYS)
    if unknown:
        raise ValueError(
            f"unknown trajectory expectation key(s) {unknown}; allowed: {sorted(TRAJECTORY_KEYS)}"
        )
    data = dict(expectation)
    for key in ("called", "not_called", "sequence"):
        if key in data:
            _name_list(data[key], key)
    if "counts" in data:
        counts = data["counts"]
        if not isinstance(counts, Mapping):
            raise ValueError(
                f"trajectory expectation 'counts' must be an object of name -> int, got {counts!r}"
            )
        for name, count in counts.items():
            _name(name, "counts key")
            _count(count, f"counts[{name!r}]")
    if "arguments" in data:
        entries = data["arguments"]
        if not isinstance(entries, list):
            raise ValueError(
                "trajectory expectation 'arguments' must be a list of {name, value, occurrence?}"
            )
        for entry in entries:
            if not isinstance(entry, Mapping) or "name" not in entry or "value" not in entry:
                raise ValueError(f"each 'arguments' entry needs 'name' and 'value', got {entry!r}")
            extra = sorted(set(entry) - {"name", "value", "occurrence"})
            if extra:
                raise ValueError(f"unknown key(s) {extra} in an 'arguments' entry")
            _name(entry["name"], "arguments name")
            if entry.get("occurrence") is not None:
                _count(entry["occurrence"], "arguments occurrence", minimum=1)
    if "order" in data:
        pairs = data["order"]
        if not isinstance(pairs, list):
            raise ValueError("trajectory expectation 'order' must be a list of [before, after] pairs")
        for pair in pairs:
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ValueError(f"each 'order' entry must be a [before, after] pair, got {pair!r}")
            _name(pair[0], "order entry")
            _name(pair[1], "order entry")
    if "strict_sequence" in data:
        if not isinstance(data["strict_sequence"], bool):
            raise ValueError("trajectory expectation 'strict_sequence' must be a boolean")
        if "sequence" not in data:
            raise ValueError("trajectory expectation 'strict_sequence' needs 'sequence'")
    if "max_steps" in data:
        _count(data["max_steps"], "max_steps")
    return data


def assert_trajectory(replay: _Replay, expectation: Mapping[str, Any]) -> None:
    """Apply a reviewed trajectory expectation (see :func:`validate_trajectory_expectation`).

    Raises:
        ValueError: a bad expectation shape (checked before anything is asserted).
        AssertionError: the first failing check, as the individual assertions word it.
    """
    data = validate_trajectory_expectation(expectation)
    _require_valid(replay)
    for name in data.get("called", ()):
        assert_tool_called(replay, name)
    for name in data.get("not_called", ()):
        assert_tool_not_called(replay, name)
    for name, count in data.get("counts", {}).items():
        assert_tool_call_count(replay, name, count)
    for entry in data.get("arguments", ()):
        assert_tool_arguments(replay, entry["name"], entry["value"], occurrence=entry.get("occurrence"))
    for before, after in data.get("order", ()):
        assert_tool_order(replay, before, after)
    if "sequence" in data:
        assert_tool_sequence(replay, data["sequence"], strict=data.get("strict_sequence", True))
    if "max_steps" in data:
        assert_max_steps(replay, data["max_steps"])
