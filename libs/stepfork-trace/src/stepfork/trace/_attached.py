"""Values that travel with a loaded ``Trace`` without becoming a model field: its extension files' contents
(``concurrency.json``, ``minted.json``). Schema 0.1 has no such field, and a private pydantic attribute
would take part in ``Trace`` equality: a registry keyed by the trace's id, each entry dropped when its
trace is collected."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Attached(Generic[T]):
    """One kind of value attached to traces (:meth:`attach`, :meth:`of`)."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], T]] = {}

    def attach(self, trace: Any, value: T | None) -> None:
        """Make ``value`` the one attached to ``trace``; None forgets it."""
        key = id(trace)
        if value is None:
            self._entries.pop(key, None)
            return

        def _drop(_ref: weakref.ref[Any], key: int = key) -> None:
            self._entries.pop(key, None)

        self._entries[key] = (weakref.ref(trace, _drop), value)

    def of(self, trace: Any) -> T | None:
        """The value attached to ``trace``, or None."""
        entry = self._entries.get(id(trace))
        if entry is not None and entry[0]() is trace:
            return entry[1]
        return None


def read_parsed(path: Any, name: str, parse: Callable[[Any], T | None]) -> T | None:
    """``parse`` of the extension file ``<name>.json`` of the bundle at ``path``, or None when it is absent,
    unreadable or malformed (``parse`` raising ValueError or answering None)."""
    from stepfork.trace.errors import TraceError
    from stepfork.trace.reading import read_extension

    try:
        return parse(read_extension(path, name))
    except (TraceError, ValueError, OSError):
        return None
