"""An agent that ends the process with ``os._exit`` while a command runs it in process.

``os._exit(status)`` ends the interpreter at once: no exception reaches the command, no report is printed,
and the process's status is the agent's own. For ``stepfork replay`` that status read as a verdict: an
agent calling ``os._exit(0)`` mid-run made the replay exit 0, which says "the run completed" to a CI job
that has nothing else to go by. While :func:`os_exit_reported` is active, the process still ends where the
agent ends it (nothing of the agent is unwound or run again), but with the command's own line and exit code.
Under ``stepfork record -- python SCRIPT`` it finishes the bundle first and ends with the program's own
status (docs/cli.md, "record").
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator

__all__ = ["os_exit_reported"]


@contextlib.contextmanager
def os_exit_reported(
    message: Callable[[int], str], code: int | None, *, json_error: str | None = None, result: bool = False
) -> Iterator[None]:
    """While the block runs, ``os._exit(status)`` called in this process (from any thread) flushes stdout,
    writes ``message(status)`` as one line to stderr (to stdout with ``result`` and no ``json_error``: the
    line is the command's result, as ``fork``'s unfinished run; issue 32) and ends the process with
    ``code`` instead of ``status``.

    Args:
        message: the line for the agent's status (an int, as ``os._exit`` takes); called once, as the
            process ends, so it may first do what the command owes before that (``record``: finish the
            bundle) and say how it went.
        code: the command's exit code for it (``replay``: 2, could not execute, spec/replay.txt "Exit
            codes"; ``fork``: 1, the forked run did not complete), or None for the agent's own status
            (``record``: the program's exit status is the command's, docs/cli.md).
        json_error: with ``--json``, the error code of the object ``{"error", "message", "exit_code"}``
            written first, as one line, to the standard output the block started with (a command that
            sends the agent's prints to stderr while it runs redirects file descriptor 1 inside the block).

    A process the agent forked (``os.getpid()`` differs: multiprocessing's fork start method ends its
    children with ``os._exit``) exits with its own status. A module that kept ``from os import _exit``
    before the block, ``posix._exit`` and a C extension's ``exit()`` are not seen (docs/cli.md, "replay").
    """
    real = os._exit
    pid = os.getpid()
    stdout = None
    if json_error is not None:
        with contextlib.suppress(OSError):  # no descriptor 1 (a closed stream): the line on stderr alone
            stdout = os.dup(1)

    def report(status: int) -> None:
        if os.getpid() != pid:
            real(status)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        try:
            line = message(status)
        except Exception as exc:  # never keep a process the agent ended from ending
            line = f"The agent called os._exit({status}); {type(exc).__name__}: {exc}"
        exit_code = status if code is None else code
        if stdout is not None:
            with contextlib.suppress(Exception):
                error = {"error": json_error, "message": line, "exit_code": exit_code}
                os.write(stdout, json.dumps(error, ensure_ascii=False).encode() + b"\n")
        with contextlib.suppress(Exception):
            stream = sys.stdout if result and json_error is None else sys.stderr
            # a terminal's spinner line may be open: the report starts on a line of its own
            lead = "\n" if stream.isatty() else ""
            stream.write(f"{lead}{line}\n")
            stream.flush()
        real(exit_code)

    setattr(os, "_exit", report)  # noqa: B010 - mypy refuses assigning to a module's function
    try:
        yield
    finally:
        if os._exit is report:
            setattr(os, "_exit", real)  # noqa: B010
        if stdout is not None:
            os.close(stdout)
