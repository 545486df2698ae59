"""A recorded failure's cause chain, raised again as ``__cause__`` links (CASES.md C8: "keeps the error type,
message and the chain ... so the agent's ``except`` path can run").

The recorder stores the chain under ``details["chain"]``, nearest cause first (``[{"type", "message"}, ...]``,
``stepfork.trace.eventlog.exception_chain``). :func:`link_causes` makes each entry an exception and hangs
them one under the other from the exception replay raises, so an agent's ``except RateLimited as e:``
branch that reads ``e.__cause__`` sees what it saw live:

- an entry whose type a ``raise_as`` key covers: the user's class, by the same rules as the failure
  itself (:mod:`stepfork.replay.raise_as`);
- else an entry whose type is a builtin exception of Python (``TimeoutError``, ``KeyError``; written bare,
  or ``builtins.X`` by earlier recorders): an instance of that builtin combined with
  RecordedDependencyError (``isinstance(e.__cause__, TimeoutError)`` holds, ``str()`` is the recorded
  message). Builtins are the interpreter's own classes: nothing named by the bundle is imported;
- else a :class:`~stepfork.replay.errors.RecordedDependencyError` carrying the entry's type and message.

Nothing is imported or evaluated from the bundle: types are compared as text, and only classes the user
named (``raise_as``) or Python's builtin exceptions are instantiated.
"""

from __future__ import annotations

from typing import Any

from stepfork.replay.errors import RecordedDependencyError
from stepfork.replay.raise_as import RaiseAs, builtin_exception, combined_instance


def link_causes(raised: BaseException, error: RecordedDependencyError, raise_as: RaiseAs | None) -> None:
    """Set ``__cause__`` links under ``raised`` (what replay raises for ``error``: ``error`` itself, or
    what ``raise_as`` made of it) for each entry of ``error.chain``, nearest first (module docstring).
    Where ``raised`` already has ``error`` as its ``__cause__`` (a ``raise_as`` fallback), the chain hangs
    under ``error``. Entries that are not JSON objects are skipped. Never raises but KeyboardInterrupt."""
    head = error if raised.__cause__ is error else raised
    for entry in error.chain:
        if not isinstance(entry, dict):
            continue
        cause = _cause(entry, error, raise_as)
        head.__cause__ = cause
        head = cause.__cause__ if isinstance(cause.__cause__, RecordedDependencyError) else cause


def _cause(entry: dict[str, Any], error: RecordedDependencyError, raise_as: RaiseAs | None) -> BaseException:
    error_type = str(entry.get("type") or "UnknownError")
    message = str(entry.get("message") or error_type)
    link = RecordedDependencyError(
        kind=error.kind, name=error.name, error_type=error_type, message=message, details=None
    )
    if raise_as is not None:
        try:
            converted = raise_as.convert(link)
        except ValueError:  # two keys cover this cause's type by short name: neither is chosen
            converted = link
        if converted is not link:
            return converted
    builtin = builtin_exception(error_type)
    if builtin is not None:
        made = combined_instance(builtin, link, "a recorded cause")
        if made is not None:
            return made
    return link
