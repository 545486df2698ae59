"""Structured diagnostics of a replay divergence: previews, JSON differences, fingerprints.

What a good failure looks like (STYLE.md, "Errors that carry data"): the first point of divergence, what was
expected, what came, and where. A :class:`Diagnostic` holds those fields for one call; the exceptions in
:mod:`stepfork.replay.errors` carry it and the CLI renders it (abbreviating fingerprints unless --verbose;
spec replay.txt, "Matching guarantees"). Every value here is already redacted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

from stepfork.replay.noise.compare import same_leaf as _same_leaf
from stepfork.trace.canonical import canonical_json, fingerprint
from stepfork.trace.canonical import json_path_child as _child


class _Missing:
    """Marks a value absent on one side of a difference (a key present in only one object)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing()
"""Sentinel for "no value at this path" in :class:`JsonDifference`."""

PREVIEW_CHARS = 200

WINDOW_BEFORE = 40
"""Characters shown before the first differing character of a long string (:func:`preview`'s ``around``)."""


def preview(value: Any, *, limit: int = PREVIEW_CHARS, around: int | None = None) -> str:
    """Return a one-line preview of a (redacted) JSON value: its canonical JSON, cut to ``limit`` chars.

    ``MISSING`` gives ``<missing>``; a value that has no canonical JSON gives its ``repr`` (cut too).
    ``around``: for a string, the character offset that must be seen (where it first differs from the other
    side, past ids a comparison renamed): a string longer than that is shown from :data:`WINDOW_BEFORE`
    characters before it, ``"...`` marking the cut (NEWCOMER3 F1: the real difference of two long
    strings may lie past the first ``limit`` characters).
    """
    if value is MISSING:
        return "<missing>"
    if isinstance(value, str) and around is not None and around > WINDOW_BEFORE:
        text = '"...' + canonical_json(value[around - WINDOW_BEFORE :]).decode("utf-8")[1:]
        return text if len(text) <= limit else text[: limit - 3] + "..."
    try:
        text = canonical_json(value).decode("utf-8")
    except Exception:
        text = repr(value)
    if len(text) > limit:
        return text[: limit - 3] + "..."
    return text


def display_path(path: str) -> str:
    """The reference's display form of a JSON path: ``$.a.b[1]`` -> ``a.b[1]``; the root stays ``$``."""
    if path.startswith("$."):
        return path[2:]
    if path.startswith("$["):
        return path[1:]
    return path


@dataclass(frozen=True, slots=True)
class JsonDifference:
    """The first difference between two JSON values.

    Attributes:
        path: JSON path of the differing value (``$`` for the root, ``$.filters.lang``, ``$.items[2]``).
        expected: the recorded value there, or ``MISSING``.
        actual: the live value there, or ``MISSING``.
        noise: None for a real difference; for one an output comparison accepted as noise, why
            (``renamed id``, ``timing``, ``new field`` or a rule's name: stepfork.replay.noise).
    """

    path: str
    expected: Any
    actual: Any
    noise: str | None = None
    at: tuple[int, int] | None = None
    """For two strings: the character offset, in each, of their first real difference (None: not strings,
    or the start); :func:`preview`'s ``around``."""

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "expected", "actual"}``: values as previews (strings), ``<missing>`` when absent;
        plus ``"noise"`` when the difference was accepted as noise."""
        data = {"path": self.path, "expected": preview(self.expected), "actual": preview(self.actual)}
        if self.noise is not None:
            data["noise"] = self.noise
        return data


def first_difference(expected: Any, actual: Any, *, path: str = "$") -> JsonDifference | None:
    """Walk two JSON values in canonical order and return the first difference, or None when equal.

    Objects are compared key by key in sorted order (key order never matters, C1); lists position by position
    (order matters), then by length; leaves by type and value (``1`` differs from ``1.0`` and ``true``).
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            sub = _child(path, key)
            if key not in expected:
                return JsonDifference(sub, MISSING, actual[key])
            if key not in actual:
                return JsonDifference(sub, expected[key], MISSING)
            found = first_difference(expected[key], actual[key], path=sub)
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for position, (left, right) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(left, right, path=_child(path, position))
            if found is not None:
                return found
        if len(expected) != len(actual):
            position = min(len(expected), len(actual))
            sub = _child(path, position)
            if len(expected) > len(actual):
                return JsonDifference(sub, expected[position], MISSING)
            return JsonDifference(sub, MISSING, actual[position])
        return None
    if isinstance(expected, dict | list) or isinstance(actual, dict | list):
        return JsonDifference(path, expected, actual)
    if _same_leaf(expected, actual):
        return None
    return JsonDifference(path, expected, actual)


DIFFERENCE_LIMIT = 8
"""How many differing paths a message lists before it gives only their count."""


def all_differences(
    expected: Any, actual: Any, *, limit: int = DIFFERENCE_LIMIT
) -> tuple[tuple[JsonDifference, ...], int]:
    """Every difference between two JSON values, in the order of :func:`first_difference`.

    Returns:
        ``(differences, count)``: the first ``limit`` differences (the first of them is what
        :func:`first_difference` returns) and how many there are in all (``count >= len(differences)``).
    """
    found: list[JsonDifference] = []
    count = 0

    def walk(left: Any, right: Any, path: str) -> None:
        nonlocal count
        if isinstance(left, dict) and isinstance(right, dict):
            for key in sorted(set(left) | set(right)):
                sub = _child(path, key)
                if key not in left:
                    add(JsonDifference(sub, MISSING, right[key]))
                elif key not in right:
                    add(JsonDifference(sub, left[key], MISSING))
                else:
                    walk(left[key], right[key], sub)
            return
        if isinstance(left, list) and isinstance(right, list):
            for position, (a, b) in enumerate(zip(left, right, strict=False)):
                walk(a, b, _child(path, position))
            for position in range(min(len(left), len(right)), max(len(left), len(right))):
                sub = _child(path, position)
                if position < len(left):
                    add(JsonDifference(sub, left[position], MISSING))
                else:
                    add(JsonDifference(sub, MISSING, right[position]))
            return
        if isinstance(left, dict | list) or isinstance(right, dict | list) or not _same_leaf(left, right):
            add(JsonDifference(path, left, right))

    def add(difference: JsonDifference) -> None:
        nonlocal count
        count += 1
        if len(found) < limit:
            found.append(difference)

    walk(expected, actual, "$")
    return tuple(found), count


def json_type(value: Any) -> str:
    """The JSON type of a value as a message names it: ``number, int``, ``number, float``, ``string``,
    ``boolean``, ``null``, ``object``, ``array``, or ``missing`` for :data:`MISSING`."""
    if value is MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "number, int"
    if isinstance(value, float):
        return "number, float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def typed_preview(value: Any, *, limit: int = 80) -> str:
    """``1.0 (number, float)``: a value's preview (:func:`preview`, cut to ``limit``) and its JSON type;
    ``<missing>`` alone for :data:`MISSING`."""
    if value is MISSING:
        return "<missing>"
    return f"{preview(value, limit=limit)} ({json_type(value)})"


def difference_hint(difference: JsonDifference) -> str | None:
    """A one-line hint for a difference whose cause is common and recognisable, or None.

    Rules: equal numbers of different types (``1`` vs ``1.0``: canonical JSON keeps the type, C1); a key
    present on one side only; strings equal but for case or surrounding whitespace; an object or list
    compared with a value of another type.
    """
    expected, actual = difference.expected, difference.actual
    numbers = (int, float)
    if (
        isinstance(expected, numbers)
        and isinstance(actual, numbers)
        and not isinstance(expected, bool)
        and not isinstance(actual, bool)
        and type(expected) is not type(actual)
        and expected == actual
    ):
        return (
            f"equal numbers of different JSON types (the recording has {type(expected).__name__} "
            f"{expected!r}, the agent sent {type(actual).__name__} {actual!r}): canonical JSON keeps 1 and "
            "1.0 apart; convert the value before the call, or record the run again if the change is intended"
        )
    if actual is MISSING:
        return "the recorded input has this key and the live call does not send it"
    if expected is MISSING:
        return "the live call sends a key the recorded input does not have"
    if isinstance(expected, str) and isinstance(actual, str):
        if expected.strip() == actual.strip():
            return "the strings differ only in surrounding whitespace"
        if expected.casefold() == actual.casefold():
            return "the strings differ only in letter case"
    return None


def difference_lines(
    differences: tuple[JsonDifference, ...], count: int, *, indent: str = "  ", display: bool = False
) -> list[str]:
    """The ``differing paths (N):`` block of a message: one line per difference (the first marked
    ``(first)``) with both values and their JSON types, then ``... and K more`` when ``count`` exceeds the
    differences listed. ``display`` shows paths in :func:`display_path` form (``answer``, not ``$.answer``).
    An empty list when there is no difference."""
    if not differences:
        return []
    lines = [f"{indent}differing paths ({count}):"]
    for position, item in enumerate(differences):
        mark = " (first)" if position == 0 else ""
        path = display_path(item.path) if display else item.path
        lines.append(
            f"{indent}  {path}{mark}: expected {typed_preview(item.expected)}, "
            f"actual {typed_preview(item.actual)}"
        )
    if count > len(differences):
        lines.append(f"{indent}  ... and {count - len(differences)} more")
    return lines


def model_fingerprint(provider: str | None, model: str | None) -> str:
    """SHA-256 of the canonical JSON ``{"model": model, "provider": provider}`` (LLM metadata fingerprint)."""
    return fingerprint({"model": model, "provider": provider})


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Everything known about one diverging (or failing) call, redacted, fingerprints in full.

    Attributes:
        index: 0-based index of the call in the visible recorded call list (None: past the end).
        step: ``step`` of the recorded call event in the bundle (None when there is no recorded call).
        expected_kind, actual_kind: ``"tool"``/``"llm"`` (expected None past the end).
        expected_label, actual_label: tool name, ``provider/model`` or ``model``.
        expected_input, actual_input: previews of the recorded and the redacted live input (canonical JSON,
            at most 200 characters).
        difference: the first differing value between the two inputs (C7), or None.
        expected_input_fingerprint: SHA-256 of the recorded input (stored in the bundle, or computed).
        actual_input_fingerprint: SHA-256 of the redacted canonical live input.
        recorded_output_fingerprint: SHA-256 of the recorded output, or None (no result recorded).
        fingerprints_computed: True when the bundle stores no hash for this call (legacy or hand-built
            bundle): the expected fingerprints were computed from the loaded trace.
        expected_model_fingerprint, actual_model_fingerprint: for LLM calls,
            :func:`model_fingerprint` of the recorded and the live provider/model; None for tools.
        function: the live call's instrumented function (``module:qualname``), diagnostics only.
        missing: why the recorded side has no call, when it is not the recording's end (an HTTP request
            the recording does not hold: ``no such request in the recording``), else None.
    """

    index: int | None = None
    step: int | None = None
    expected_kind: str | None = None
    actual_kind: str | None = None
    expected_label: str | None = None
    actual_label: str | None = None
    expected_input: str | None = None
    actual_input: str | None = None
    difference: JsonDifference | None = None
    expected_input_fingerprint: str | None = None
    actual_input_fingerprint: str | None = None
    recorded_output_fingerprint: str | None = None
    fingerprints_computed: bool = False
    expected_model_fingerprint: str | None = None
    actual_model_fingerprint: str | None = None
    function: str | None = None
    differences: tuple[JsonDifference, ...] = ()
    difference_count: int = 0
    hint: str | None = None
    missing: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (``difference`` and each of ``differences`` as
        :meth:`JsonDifference.to_dict`)."""
        data = asdict(self)
        data["difference"] = self.difference.to_dict() if self.difference is not None else None
        data["differences"] = [item.to_dict() for item in self.differences]
        return data

    def explain(self, *, verbose: bool = False) -> str:
        """The detail lines of a failure message (the text after its headline), each indented by two
        spaces, at most about 14 lines: every differing path (up to :data:`DIFFERENCE_LIMIT`, then a count;
        the first marked ``(first)``) with both values and their JSON types, the call on each side with its
        input preview, the input fingerprints (12 hex digits unless ``verbose``) and the hint, if any.

        It is the same text in ``str()`` of a ReplayMismatchError (pytest, exported tests, the marker) and
        in the CLI's replay report.
        """
        differences = self.differences or ((self.difference,) if self.difference is not None else ())
        lines = difference_lines(differences, max(self.difference_count, len(differences)))
        expected = _call_text(
            self.expected_kind, self.expected_label, self.expected_input, "the recording ended", 100
        )
        if self.missing and self.expected_kind is None:
            expected = self.missing
        actual = _call_text(self.actual_kind, self.actual_label, self.actual_input, "the run ended", 100)
        lines += [f"  recorded: {expected}", f"  live:     {actual}"]
        lines += self._fingerprint_lines(verbose)
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)

    def _fingerprint_lines(self, verbose: bool) -> list[str]:
        """``recorded input fingerprint: ...`` and ``actual input fingerprint: ...`` (SHA-256 of the
        redacted canonical inputs, spec replay.txt "Matching guarantees"; the earlier implementation's
        words), one line per side that has a call."""
        computed = " (computed from the loaded trace)" if self.fingerprints_computed else ""
        lines = []  # a side without a call has no fingerprint to show
        if self.expected_kind is not None or self.expected_input_fingerprint is not None:
            shown = _shown(self.expected_input_fingerprint, verbose)
            lines.append(f"  recorded input fingerprint: {shown}{computed}")
        if self.actual_kind is not None or self.actual_input_fingerprint is not None:
            lines.append(f"  actual input fingerprint:   {_shown(self.actual_input_fingerprint, verbose)}")
        return lines

    def render(self, *, verbose: bool = False) -> str:
        """Multi-line human text: a ``call #N (step S)`` header, :meth:`explain`, then the recorded output
        and model metadata fingerprints; fingerprints abbreviated to 12 hex digits unless ``verbose``.

        A side without a call says so in words: ``no further call (the recording ended)`` for a call past
        the end, ``no further call (the run ended)`` for a replay that stopped early; an absent field is
        left out, never printed as ``None``.
        """

        if self.index is None:
            header = "call past the end of the recording"
        else:  # numbered from 1 as the CLI's call list; the ``index`` field stays 0-based
            header = f"call #{self.index + 1}" + (f" (step {self.step})" if self.step is not None else "")
        lines = [header, self.explain(verbose=verbose)]
        if self.recorded_output_fingerprint is not None:
            output = _shown(self.recorded_output_fingerprint, verbose)
            lines.append(f"  recorded output fingerprint: {output}")
        if self.expected_model_fingerprint or self.actual_model_fingerprint:
            lines.append(
                f"  model metadata fingerprint: recorded {_shown(self.expected_model_fingerprint, verbose)}, "
                f"actual {_shown(self.actual_model_fingerprint, verbose)}"
            )
        return "\n".join(lines)


def _shown(value: str | None, verbose: bool) -> str:
    """A SHA-256 hex fingerprint as diagnostics print it: whole when ``verbose``, else its first 12 hex
    digits and ``…`` (spec replay.txt: "CLI diagnostics abbreviate SHA-256 fingerprints"); ``-`` for None."""
    if value is None:
        return "-"
    return value if verbose else value[:12] + "…"


def _call_text(
    kind: str | None, label: str | None, shown_input: str | None, ended: str, limit: int | None = None
) -> str:
    """``kind label  input PREVIEW`` for one side of a diagnostic, leaving out absent fields, or
    ``no further call (ENDED)`` when that side has no call at all; the preview cut to ``limit`` chars."""
    if kind is None and label is None:
        return f"no further call ({ended})"
    text = " ".join(part for part in (kind, label) if part)
    if shown_input is None:
        return text
    if limit is not None and len(shown_input) > limit:
        shown_input = shown_input[: limit - 3] + "..."
    return f"{text}  input {shown_input}"


def unmade_call_diagnostic(
    call: Any, *, hint: str, index: int | None = None, missing: str | None = None
) -> Diagnostic:
    """The diagnostic of a recorded call the replay never made (``call``: a ``plan.RecordedCall``):
    its step, kind, label, input preview and stored input fingerprint, with ``hint`` (``index``: its
    position in the visible plan, None for a request outside the agent's order; ``missing``: why the live
    side is empty, when not the recording's end)."""
    return Diagnostic(
        index=index,
        step=call.step,
        expected_kind=call.kind,
        expected_label=call.label,
        expected_input=preview(call.input),
        expected_input_fingerprint=call.input_hash,
        fingerprints_computed=call.input_hash is None,
        hint=hint,
        missing=missing,
    )
