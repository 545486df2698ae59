"""The AWS pair rule of :mod:`stepfork.trace.redaction` (docs/redaction.md rule 2, "next to its key id").

An AWS secret access key is 40 characters of base64 with no prefix of its own, so a lone one is not
redacted (a path, a digest or a base64 id has the same shape). Its access key id has a prefix (``AKIA`` /
``ASIA``), and code keeps the two together: ``[key_id, secret]``, ``(key_id, secret)`` passed as
arguments, a CLI argv, ``{"id": key_id, "value": secret}``, a tool's result that holds the pair and
echoes the secret elsewhere. So in one JSON value (an event's input, its output, a manifest field) that
holds an access key id in any string, every string that is exactly a secret's shape (40 characters of
``[A-Za-z0-9/+]`` with both cases of letters, so a SHA-1 hex digest is not one; spaces around it allowed)
is a secret (:func:`redact_paired`); on a command line, any argument of that shape when another argument
holds an id (:func:`paired_secrets`). Inside one string the text rule ``aws_secret_after_key_id`` does the
same (NEWCOMER3 finding 5).

The redaction walk asks this only for a value in which something was redacted (an access key id always
is), so a payload without a secret costs nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Final

__all__ = ["holds_key_id", "paired_secrets", "redact_paired"]

_KEY_ID: Final = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", re.ASCII)
_SECRET_SHAPE: Final = re.compile(
    r"\s*(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}\s*", re.ASCII
)
_MAX_LENGTH: Final = 48  # 40 characters and a little space around them
_TAG: Final = "$stepfork"
_ENCODED: Final = ("bytes", "str")  # tagged forms whose "value" is base64, not text


def _is_secret_shape(value: str) -> bool:
    return len(value) <= _MAX_LENGTH and _SECRET_SHAPE.fullmatch(value) is not None


def paired_secrets(items: Iterable[tuple[Any, Any]]) -> list[Any]:
    """The positions (list indices or object keys) of the items that are AWS secret access keys by the
    pair rule (module docstring), or ``[]``.

    Args:
        items: ``(position, value)`` of the direct items of one list (``enumerate``) or object
            (``dict.items()``), as they were before redaction; values of any JSON type.

    Returns:
        list: the positions whose value is a str of a secret's shape, when another str item holds an
        access key id; ``[]`` when none does or no item has the shape.
    """
    shaped: list[Any] = []
    has_id = False
    for position, value in items:
        if type(value) is not str:
            continue
        if _is_secret_shape(value):
            shaped.append(position)
        elif not has_id and _KEY_ID.search(value):
            has_id = True
    return shaped if has_id else []


_Found = Callable[[list[str | int]], None]


def holds_key_id(value: Any) -> bool:
    """True when a string anywhere in the JSON ``value`` (dict keys and the base64 of tagged bytes
    aside) holds an AWS access key id (``AKIA``/``ASIA`` and 16 capitals or digits)."""
    stack = [value]
    while stack:
        item = stack.pop()
        t = type(item)
        if t is str:
            if _KEY_ID.search(item):
                return True
        elif t is list:
            stack.extend(item)
        elif t is dict:
            if item.get(_TAG) in _ENCODED:
                continue
            stack.extend(item.values())
    return False


def redact_paired(value: Any, replacement: str, found: _Found) -> Any:
    """``value`` with every string of a secret's shape replaced by ``replacement`` (``value`` itself when
    none is), calling ``found(parts)`` with the key path of each. Call it for a value that
    :func:`holds_key_id` (module docstring); the base64 of tagged bytes is never touched."""
    return _replaced(value, replacement, found, [])


def _replaced(value: Any, replacement: str, found: _Found, parts: list[str | int]) -> Any:
    t = type(value)
    if t is str:
        if _is_secret_shape(value):
            found(list(parts))
            return replacement
        return value
    if t is not list and t is not dict:
        return value
    if t is dict and value.get(_TAG) in _ENCODED:
        return value
    out: Any = None  # the copy, made at the first change (a list or a dict, as ``value``)
    for key, item in enumerate(value) if t is list else value.items():
        if type(item) not in (str, list, dict):
            continue
        parts.append(key)
        new = _replaced(item, replacement, found, parts)
        parts.pop()
        if new is not item:
            out = (list(value) if t is list else dict(value)) if out is None else out
            out[key] = new
    return value if out is None else out
