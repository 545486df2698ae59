"""The JSON lines ``minimize``'s and ``check``'s processes exchange: the client and the zygote
(:mod:`.client`, :mod:`.server`), the zygote and its workers (:mod:`stepfork.analysis.check._batch`)."""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["line_of", "parse_line"]


def line_of(message: Any) -> bytes:
    """One protocol line: ``message`` as compact JSON and a newline.

    orjson writes it (a verdict line costs a worker 1 us instead of 10); what orjson refuses (an integer
    past 64 bits, such as a crafted bundle's step, or a lone surrogate from an undecodable file name) is
    written by the stdlib after a leading space, which tells :func:`parse_line` to read it with the stdlib
    too (orjson would read such an integer as a float). The messages are the processes' own (verdicts,
    signatures, bundle lists, the configuration): no NaN or infinity, which orjson would write as ``null``.
    """
    try:
        return orjson.dumps(message) + b"\n"
    except TypeError:  # orjson.JSONEncodeError
        return b" " + json.dumps(message).encode() + b"\n"


def parse_line(data: bytes | str) -> Any:
    """The value of one protocol line written by :func:`line_of`.

    Raises:
        ValueError: the line is not JSON.
    """
    if data[:1] in (b" ", " "):
        return json.loads(data)
    return orjson.loads(data)  # orjson.JSONDecodeError is a ValueError
