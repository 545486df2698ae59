"""The AWS pair rule of :mod:`stepfork.trace.redaction` (docs/redaction.md rule 2, "next to its key id").

An AWS secret access key is 40 characters of base64 with no prefix of its own, so a lone one is not
redacted (a path, a digest or a base64 id has the same shape). Its access key id has a prefix (``AKIA`` /
``ASIA``), and code keeps the two together: ``[key_id, secret]``, ``(key_id, secret)`` passed as
arguments, a CLI argv, ``{"id": key_id, "value": secret}``. So a string that is a secret's shape (40
characters of ``[A-Za-z0-9/+]`` with both cases of letters, so a SHA-1 hex digest is not one, spaces around
it allowed) is a secret when another direct item of the same list, or another value of the same object,
holds an access key id. Inside one string the text rule ``aws_secret_after_key_id`` does the same
(NEWCOMER3 finding 5).

The walk asks this only for a container in which something was redacted (an access key id always is), so
a payload without a secret costs nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

__all__ = ["paired_secrets"]

_KEY_ID: Final = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", re.ASCII)
_SECRET_SHAPE: Final = re.compile(
    r"\s*(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}\s*", re.ASCII
)
_MAX_LENGTH: Final = 48  # 40 characters and a little space around them


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
        if len(value) <= _MAX_LENGTH and _SECRET_SHAPE.fullmatch(value):
            shaped.append(position)
        elif not has_id and _KEY_ID.search(value):
            has_id = True
    return shaped if has_id else []
