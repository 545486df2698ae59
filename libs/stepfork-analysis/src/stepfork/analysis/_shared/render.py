"""Rendering helpers shared by the analysis result objects (diff, score, minimize, fork).

Each result renders three ways (STYLE.md, "Result objects that render themselves"): ``__str__`` plain text
for terminals, ``_repr_html_`` for notebooks, ``to_dict()`` for ``--json``. Values shown to a human are
redacted first (DESIGN.md, "Errors and output": secrets never leave redaction, not in diffs).
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from stepfork.replay.diagnostics import WINDOW_BEFORE, preview

# Characters a terminal acts on instead of showing: C0 controls but tab, DEL, C1 controls, line and
# paragraph separators, bidi embeddings, overrides and isolates. Trace text is data, so these are shown
# escaped (issue 7: a tool name holding ESC or CR could restyle or overwrite what the user reads).
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

# What XML 1.0 forbids besides those (section 2.2, Char): lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def escape_controls(text: str) -> str:
    """``text`` with terminal control characters written as escapes (``\\x1b``, ``\\n``, ``\\u202e``);
    the one rule for trace text shown to a human (the CLI's commands and the analysis results)."""
    return _CONTROL.sub(_escape, text)


def xml_text(text: str) -> str:
    """``text`` made fit for an XML 1.0 attribute or element and a terminal: :func:`escape_controls`, then
    the characters XML 1.0 forbids that are not controls (lone surrogates, U+FFFE, U+FFFF) escaped alike.
    A NUL or ESC in an agent's stderr would otherwise make a JUnit report no parser reads."""
    return _NOT_XML.sub(_escape, escape_controls(text))


class _Absent:
    """The marker of a key or list item that is not there (printed ``(absent)``, unlike ``null``)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()
"""Singleton standing for "no value here" (an absent key); distinct from ``None`` (JSON null)."""


def redacted(value: Any) -> Any:
    """Return ``value`` (a JSON value) with secrets replaced by ``[REDACTED]`` (stepfork.trace redaction)."""
    from stepfork.trace import redact_json

    result = redact_json(value)
    return getattr(result, "value", result)


def show_value(value: Any, *, limit: int = 200, around: int | None = None) -> str:
    """Return one line of compact JSON for ``value`` (``(absent)`` for :data:`ABSENT`), cut at ``limit``
    characters. ``around``: for a string, the character offset that must be seen (where it differs from
    another): a long string is shown as replay's previews show it
    (:func:`stepfork.replay.diagnostics.preview`: from ``WINDOW_BEFORE`` characters before it, ``...``
    marking each cut; NEWCOMER3 F1)."""
    if value is ABSENT:
        return "(absent)"
    if isinstance(value, str) and around is not None:
        shown = redacted(value)
        if isinstance(shown, str) and shown == value and around > WINDOW_BEFORE:
            return preview(value, limit=limit, around=around)
    try:
        text = json.dumps(redacted(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def html_table(caption: str, header: list[str], rows: list[list[str]]) -> str:
    """Return an HTML table (cells escaped) with a caption; used by the ``_repr_html_`` methods."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f"<table><caption>{html.escape(caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def pre(text: str) -> str:
    """Return ``text`` escaped inside a ``<pre>`` block (the plain rendering, for notebooks)."""
    return f"<pre>{html.escape(text)}</pre>"
