"""Colour for verdicts on a terminal (issue 13): ``MATCHED`` green, ``DIVERGED`` red, and so on.

:func:`echo` prints text through rich, which colours only when the stream is a terminal and never when
``NO_COLOR`` is set (https://no-color.org; rich reads it, and ``FORCE_COLOR`` to force colour). Only the
verdict words and the check marks are styled; everything else prints as plain text, markup off (trace text
is data, never markup).
"""

from __future__ import annotations

import os
import re
import sys

GOOD = ("REPRODUCED FAILURE", "COMPLETED", "COMPLETE", "MATCHED", "PASSED", "EQUIVALENT", "VERIFIED", "✓")
BAD = ("BEHAVIOR CHANGED", "DIVERGED", "INCOMPLETE", "REJECTED", "FAILED", "MISMATCH", "✗")
UNSURE = ("COULD NOT EXECUTE", "NOT COMPARED", "NOT RECORDED", "UNVERIFIABLE", "UNVERIFIED")

_STYLES = {
    **dict.fromkeys(GOOD, "bold green"),
    **dict.fromkeys(BAD, "bold red"),
    **dict.fromkeys(UNSURE, "yellow"),
}
# longest first, so "COMPLETED" wins over "COMPLETE" and "COULD NOT EXECUTE" is one match
_WORDS = re.compile(
    "|".join(
        (r"(?<![A-Za-z])" + re.escape(word) + r"(?![A-Za-z])") if word[0].isalpha() else re.escape(word)
        for word in sorted(_STYLES, key=len, reverse=True)
    )
)


def echo(text: str, *, err: bool = False) -> None:
    """Print ``text`` (one or more lines) to stdout (stderr with ``err``), its verdict words coloured on a
    terminal; plain when piped or with ``NO_COLOR``."""
    stream = sys.stderr if err else sys.stdout
    plain = os.environ.get("NO_COLOR") or (not stream.isatty() and not os.environ.get("FORCE_COLOR"))
    if plain or not _WORDS.search(text):
        stream.write(text + "\n")  # the common case when piped: no rich import at all
        stream.flush()
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream, markup=False, highlight=False, emoji=False, soft_wrap=True)
    styled = Text(text)
    for match in _WORDS.finditer(text):
        styled.stylize(_STYLES[match.group(0)], match.start(), match.end())
    console.print(styled)
