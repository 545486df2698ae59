"""Structured diagnostics of a replay divergence: previews, JSON differences, fingerprints.

What a good failure looks like (STYLE.md, "Errors that carry data"): the first point of divergence, what was
expected, what came, and where. A :class:`Diagnostic` holds those fields for one call; the exceptions in
:mod:`stepfork.replay.errors` carry it and the CLI renders it (abbreviating fingerprints unless --verbose;
spec replay.txt, "Matching guarantees"). Every value here is already redacted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

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


def preview(value: Any, *, limit: int = PREVIEW_CHARS) -> str:
    """Return a one-line preview of a (redacted) JSON value: its canonical JSON, cut to ``limit`` chars.

    ``MISSING`` gives ``<missing>``; a value that has no canonical JSON gives its ``repr`` (cut too).
    """
    if value is MISSING:
        return "<missing>"
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


def _same_leaf(a: Any, b: Any) -> bool:
    # JSON equality as canonical bytes see it: 1 != 1.0, True != 1, -0.0 != 0.0 (REFERENCE-NOTES.md 2.1).
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return repr(a) == repr(b)
    return bool(a == b)


@dataclass(frozen=True, slots=True)
class JsonDifference:
    """The first difference between two JSON values.

    Attributes:
        path: JSON path of the differing value (``$`` for the root, ``$.filters.lang``, ``$.items[2]``).
        expected: the recorded value there, or ``MISSING``.
        actual: the live value there, or ``MISSING``.
    """

    path: str
    expected: Any
    actual: Any

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "expected", "actual"}``: values as previews (strings), ``<missing>`` when absent."""
        return {"path": self.path, "expected": preview(self.expected), "actual": preview(self.actual)}


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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (``difference`` as :meth:`JsonDifference.to_dict`)."""
        data = asdict(self)
        data["difference"] = self.difference.to_dict() if self.difference is not None else None
        return data

    def render(self, *, verbose: bool = False) -> str:
        """Multi-line human text; fingerprints abbreviated to 12 hex digits unless ``verbose``.

        A side without a call says so in words: ``expected: no further call (the recording ended)`` for a
        call past the end, ``actual: no further call (the run ended)`` for a replay that stopped early;
        an absent field is left out, never printed as ``None``.
        """

        def fp(value: str | None) -> str:
            if value is None:
                return "-"
            return value if verbose else value[:12] + "…"

        if self.index is None:
            header = "call past the end of the recording"
        else:  # numbered from 1 as the CLI's call list; the ``index`` field stays 0-based
            header = f"call #{self.index + 1}" + (f" (step {self.step})" if self.step is not None else "")
        ended = "the recording ended"
        expected = _call_text(self.expected_kind, self.expected_label, self.expected_input, ended)
        actual = _call_text(self.actual_kind, self.actual_label, self.actual_input, "the run ended")
        lines = [header, f"  expected: {expected}", f"  actual:   {actual}"]
        if self.difference is not None:
            d = self.difference
            lines.append(
                f"  first difference at {d.path}: expected {preview(d.expected)}, got {preview(d.actual)}"
            )
        computed = " (computed from the loaded trace)" if self.fingerprints_computed else ""
        shas = []  # a side without a call has no fingerprint to show
        if self.expected_kind is not None or self.expected_input_fingerprint is not None:
            shas.append(f"expected {fp(self.expected_input_fingerprint)}{computed}")
        if self.actual_kind is not None or self.actual_input_fingerprint is not None:
            shas.append(f"actual {fp(self.actual_input_fingerprint)}")
        if shas:
            lines.append("  input sha256: " + ", ".join(shas))
        if self.recorded_output_fingerprint is not None:
            lines.append(f"  recorded output sha256: {fp(self.recorded_output_fingerprint)}")
        if self.expected_model_fingerprint or self.actual_model_fingerprint:
            lines.append(
                f"  model metadata sha256: expected {fp(self.expected_model_fingerprint)}, "
                f"actual {fp(self.actual_model_fingerprint)}"
            )
        return "\n".join(lines)


def _call_text(kind: str | None, label: str | None, shown_input: str | None, ended: str) -> str:
    """``kind label  input PREVIEW`` for one side of a diagnostic, leaving out absent fields, or
    ``no further call (ENDED)`` when that side has no call at all."""
    if kind is None and label is None:
        return f"no further call ({ended})"
    text = " ".join(part for part in (kind, label) if part)
    return text if shown_input is None else f"{text}  input {shown_input}"
