"""One self-contained HTML page: the template, the inline CSS and JS (package data), the embedded JSON.

Safety rules (issue 16; docs/view.md "Safety"): bundle data only ever enters the page as the text of a
``<script type="application/json">`` element, with ``<``, ``>`` and ``&`` written as ``\\u003c``,
``\\u003e`` and ``\\u0026`` (so no ``</script>``, ``<!--`` or entity can end or change the element; the
JSON still parses to the same value), and the script renders it with ``textContent`` and DOM building only.
A Content-Security-Policy meta tag allows only this page's own script and style (by SHA-256 hash) and
forbids every network fetch (``default-src 'none'``, ``connect-src 'none'``, ``form-action 'none'``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from typing import Any

import orjson

__all__ = ["DATA_ELEMENT", "META_ELEMENT", "embed_json", "is_page", "page_chunks"]

DATA_ELEMENT = "sf-events"  # id of the <script type="application/json"> holding the event array
META_ELEMENT = "sf-meta"  # id of the one holding the summary and the view's own data

_ESCAPES = ((b"&", b"\\u0026"), (b"<", b"\\u003c"), (b">", b"\\u003e"))


def embed_json(value: Any) -> bytes:
    """The JSON bytes of ``value`` safe inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` only occur inside JSON strings, where ``\\u003c`` and the rest mean the same
    character, so the text parses back to ``value`` and no sequence in it can close the element.
    Integers beyond 64 bits (which orjson refuses) are written exactly by the standard library.
    Raises TypeError or ValueError for a value with no JSON form.
    """
    try:
        data = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:
        data = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    for raw, escaped in _ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


@cache
def _asset(name: str) -> str:
    return resources.files("stepfork.analysis.view").joinpath("assets", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def csp(script: str, style: str) -> str:
    """The Content-Security-Policy of a page whose only script and style are ``script`` and ``style``."""
    return (
        "default-src 'none'; "
        f"script-src 'sha256-{_sha256(script)}'; "
        f"style-src 'sha256-{_sha256(style)}'; "
        "img-src data:; connect-src 'none'; font-src 'none'; media-src 'none'; object-src 'none'; "
        "frame-src 'none'; worker-src 'none'; form-action 'none'; base-uri 'none'"
    )


_PAGE_START = b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
_PAGE_MARK = b"<noscript>This Stepfork view needs JavaScript.</noscript>"
_HEAD_LIMIT = 1 << 16  # the head (CSP, title, the stylesheet) and the mark come within the first 64 KiB


def is_page(head: bytes) -> bool:
    """True when ``head``, the first bytes of a file (up to 64 KiB), begin a page :func:`page_chunks`
    wrote (its fixed start, then its ``<noscript>`` mark in the body's first element)."""
    return head.startswith(_PAGE_START) and _PAGE_MARK in head[:_HEAD_LIMIT]


def page_chunks(title: str, events: Iterable[bytes], meta: Any) -> Iterator[bytes]:
    """The bytes of one page, in order: head, the event array (streamed from ``events``, each item the
    output of :func:`embed_json`), then ``meta`` (a JSON value, evaluated after the events so a caller can
    fill in totals while they stream: pass a zero-argument callable to compute it late), then the script.
    """
    script, style = _asset("view.js"), _asset("view.css")
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp(script, style)}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{style}</style>\n</head><body>\n"
        '<div id="app"><noscript>This Stepfork view needs JavaScript.</noscript></div>\n'
        f'<script type="application/json" id="{DATA_ELEMENT}">['
    ).encode()
    first = True
    for item in events:
        yield item if first else b"," + item
        first = False
    yield f']</script>\n<script type="application/json" id="{META_ELEMENT}">'.encode()
    yield embed_json(meta() if callable(meta) else meta)
    yield f"</script>\n<script>{script}</script>\n</body></html>\n".encode()
