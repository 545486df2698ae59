"""What a view embeds: redacted event items streamed from a bundle, the run summary (accumulated by
:class:`stepfork.analysis.inspection.summary.SummaryBuilder`), JSON Pointers.

Every value is redacted with the bundle's own rules (``stepfork.trace.redaction.redact_json``) before it
is embedded, like every other output (DESIGN.md, "Errors and output").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from stepfork.analysis.inspection import (
    SummaryBuilder,  # the one summary, shared with `stepfork inspect`
)
from stepfork.analysis.view._page import embed_json
from stepfork.trace.redaction import redact_json

__all__ = ["SummaryBuilder", "event_items", "path_to_pointer", "redacted"]

_DROPPED = ("run_id",)  # the same in every event of a bundle: shown once in the summary


def redacted(value: Any) -> Any:
    """``value`` (JSON) with secrets replaced by ``[REDACTED]``."""
    return redact_json(value).value


def event_items(events: Iterable[Any], summary: SummaryBuilder, origin: datetime) -> Iterator[bytes]:
    """Each event of ``events`` as embedded JSON bytes (its fields, redacted, without ``run_id``, plus
    ``t``: microseconds since ``origin``), counted into ``summary`` on the way. Holds one event at a time.
    """
    for event in events:
        summary.add(event)
        data = event.model_dump(mode="json")
        for name in _DROPPED:
            data.pop(name, None)
        data = redacted(data)
        data["t"] = int((event.timestamp - origin).total_seconds() * 1_000_000)
        yield embed_json(data)


_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def path_to_pointer(path: str | None) -> str | None:
    """The JSON Pointer (RFC 6901) of a dotted path: ``output.items[2].id`` -> ``/output/items/2/id``,
    ``$.a.b`` -> ``/a/b``, ``$`` -> ``""``; None for None. A key holding ``.`` or ``[`` cannot be told
    apart in the dotted form; it is split where it shows one (the dotted paths come from the diff and the
    replay diagnostic, which write keys as they are)."""
    if path is None:
        return None
    text = path[1:] if path.startswith("$") else "." + path if path and path[0] != "[" else path
    tokens: list[str] = []
    for match in _STEP.finditer(text):
        token = match.group(1) if match.group(1) is not None else match.group(2)
        tokens.append(token.replace("~", "~0").replace("/", "~1"))
    return "".join("/" + t for t in tokens)
