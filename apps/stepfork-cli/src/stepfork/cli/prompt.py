"""A yes/no question on the terminal whose Ctrl-C is never lost (``replay --mode manual``'s approvals).

``typer.confirm`` prints the question, then blocks in ``read()`` on stdin. Python's own SIGINT handler only
sets a flag that the interpreter checks between bytecodes, so a Ctrl-C that lands after the last check and
before ``read()`` starts is noted and never acted on: the process keeps waiting for an answer (seen under
load: one run in about 30 hung). Here the question waits in ``select()`` on stdin *and* a pipe that
``signal.set_wakeup_fd`` writes to from the C handler itself, so a signal that arrives at any moment wakes
the wait, and the interpreter then raises the ``KeyboardInterrupt`` (the CLI prints ``Interrupted.`` and
exits 130). Answers are read from the descriptor into a buffer of this module, so answers typed ahead
("y\\ny\\n") are each used once, by the questions in turn.

Where this cannot work (not the main thread, no ``select`` on stdin: Windows, a closed or replaced stdin)
the question falls back to ``typer.confirm``.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading

import typer

__all__ = ["confirm"]

_typed_ahead = bytearray()  # bytes read from stdin past the last answer's newline


def confirm(question: str, *, default: bool = False) -> bool:
    """Ask ``question`` on stderr with ``[y/N]`` (``[Y/n]`` when ``default``) and return the answer.

    Accepts what ``typer.confirm`` accepts: ``y``/``yes``, ``n``/``no`` (any case), an empty line for
    ``default``; anything else says ``Error: invalid input: answer y or n`` and asks again. The end of
    input (Ctrl-D) is no answer, so ``default`` too, said on the terminal (``typer.confirm`` raised
    ``Abort`` there, which reached the agent's code as an exception of its own and was reported as the
    agent's failure).

    Raises:
        KeyboardInterrupt: Ctrl-C while waiting (never lost, see the module docstring).
    """
    fd = _stdin_descriptor()
    if fd is None:
        return typer.confirm(question, default=default, err=True)
    suffix = " [Y/n]: " if default else " [y/N]: "
    while True:
        line = _answer(fd, question + suffix)
        if line is None:
            typer.echo(f"(end of input: {'yes' if default else 'no'})", err=True)
            return default
        value = line.strip().lower()
        if value in ("y", "yes"):
            return True
        if value in ("n", "no"):
            return False
        if value == "":
            return default
        typer.echo("Error: invalid input: answer y or n", err=True)


def _stdin_descriptor() -> int | None:
    """stdin's file descriptor when the wait of :func:`_answer` works here, else None."""
    if os.name != "posix" or threading.current_thread() is not threading.main_thread():
        return None
    try:
        return sys.stdin.fileno() if sys.stdin is not None else None
    except (AttributeError, OSError, ValueError):  # replaced by an object without one, or closed
        return None


def _answer(fd: int, prompt: str) -> str | None:
    """Print ``prompt`` and return the next line typed (without its newline), or None at end of input."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    # set before the prompt is printed: from here on a signal either is acted on by the next bytecode or
    # wakes the select below, never neither
    previous = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    try:
        typer.echo(prompt, nl=False, err=True)
        while b"\n" not in _typed_ahead:
            ready, _, _ = select.select([fd, wake_read], [], [])
            if wake_read in ready:
                os.read(wake_read, 64)
                continue  # Ctrl-C raises KeyboardInterrupt here; any other handled signal: wait on
            chunk = os.read(fd, 4096)
            if not chunk:  # end of input: the last line may lack its newline
                if not _typed_ahead:
                    return None
                _typed_ahead.extend(b"\n")
            _typed_ahead.extend(chunk)
        line, _, rest = bytes(_typed_ahead).partition(b"\n")
        _typed_ahead[:] = rest
        return line.decode("utf-8", errors="replace")
    finally:
        signal.set_wakeup_fd(previous)
        os.close(wake_read)
        os.close(wake_write)
