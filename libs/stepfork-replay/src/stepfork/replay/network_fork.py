"""Refusals in a child forked during a sealed replay reach the parent (docs/replay.md, "The network is
sealed").

A child made by ``os.fork`` (a ``multiprocessing`` pool with the ``fork`` start method) keeps the seal's
hooks, but its sessions are the parent's: a refusal there would be recorded nowhere, and the child's error
may come back pickled (``pool.map``) and be swallowed. So before the first fork under a sealed session the
parent makes a pipe (:func:`before_fork`); the child writes each refusal on it, one JSON line
(:func:`tell_parent`); the session reads them when it ends (:func:`child_refusals`), each its divergence.
A replay that never forks makes no pipe.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

_child_of: tuple[int, int] | None = None
"""``(the parent's pid, the write end of its pipe)`` in a child forked while sealed sessions were active."""
_fork_pipe: tuple[int, int] | None = None
"""The parent's ``(read, write)`` pipe its forked children report refusals on (made at the first fork)."""


def before_fork(sessions: bool) -> None:
    """Before a fork: make the pipe the child will report on, when ``sessions`` (a sealed session of this
    process is in force) and there is none yet; a forked child reports to its own parent only."""
    global _fork_pipe
    if sessions and _fork_pipe is None and _child_of is None:
        with contextlib.suppress(OSError):
            read, write = os.pipe()
            os.set_blocking(read, False)
            _fork_pipe = (read, write)


def _after_fork_in_child() -> None:
    global _child_of, _fork_pipe
    if _fork_pipe is not None:
        os.close(_fork_pipe[0])
        _child_of = (os.getppid(), _fork_pipe[1])
    _fork_pipe = None


def tell_parent(report: dict[str, str]) -> None:
    """Write ``report`` (:func:`stepfork.replay.network_errors.reported_error`'s JSON object, each value
    cut to 200 characters) on the pipe to the parent, one line (one short write: atomic on a pipe)."""
    if _child_of is not None:
        import json

        line = json.dumps({key: value[:200] for key, value in report.items()})
        with contextlib.suppress(OSError):
            os.write(_child_of[1], (line + "\n").encode("utf-8", "replace"))


def child_refusals() -> list[Any]:
    """Every refusal the forked children reported since the last call (non-blocking): their JSON objects
    (:func:`stepfork.replay.network_errors.reported_error`)."""
    if _fork_pipe is None:
        return []
    data = b""
    with contextlib.suppress(BlockingIOError, OSError):
        while chunk := os.read(_fork_pipe[0], 65536):
            data += chunk
    from stepfork.replay.network_children import parse_report_lines

    return parse_report_lines(data)


def close_pipe() -> None:
    """Close the pipe (no sealed session of this process is in force any more); the next fork under one
    makes a new one."""
    global _fork_pipe
    if _fork_pipe is not None:
        for descriptor in _fork_pipe:
            with contextlib.suppress(OSError):
                os.close(descriptor)
        _fork_pipe = None


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)
