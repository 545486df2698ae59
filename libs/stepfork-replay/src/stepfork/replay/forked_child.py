"""A process the agent forks that leaves the agent ends there (docs/cli.md, "Forked children").

A child made by ``os.fork`` in the agent's code that returns or raises out of it (a failed ``os.execv``
with no ``os._exit`` after it, say) would go on into what Stepfork runs after the agent: the end of the
replay and the command's report, which are its parent's (a second, contradicting report on stdout:
NEWCOMER3 finding 11), or the rest of a pytest session. :func:`child_ends_here` ends it where it leaves
the agent, with the status ``python`` gives a program that ends so, as ``-- python SCRIPT`` always did.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Iterator
from typing import Any, NoReturn

__all__ = ["child_ends_here", "end_child"]


@contextlib.contextmanager
def child_ends_here() -> Iterator[None]:
    """Run the block (the agent) so that a process forked in it that leaves the block ends there.

    The process that entered the block leaves it as usual (a return, or the exception propagating). A
    forked child (``os.getpid()`` differs) never leaves it: :func:`end_child` ends it with status 0 after
    a return, ``sys.exit(code)``'s status after a ``SystemExit``, and 1, its traceback on stderr, after any
    other exception.
    """
    parent = os.getpid()
    try:
        yield
    except SystemExit as exc:
        if os.getpid() != parent:
            end_child(exc.code)
        raise
    except BaseException:
        if os.getpid() != parent:
            traceback.print_exc()
            end_child(1)
        raise
    if os.getpid() != parent:
        end_child(None)


def end_child(code: Any) -> NoReturn:
    """End this process with the status ``sys.exit(code)`` gives (None: 0; an int: itself; anything
    else: printed on stderr, 1), stdout and stderr flushed, without running what the parent's process
    registered to run at its exit (``os._exit``)."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)
