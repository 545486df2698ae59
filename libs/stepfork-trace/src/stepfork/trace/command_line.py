"""``record_main``: the command line of a script that records one run into a bundle.

An agent script that ends with ``sys.exit(main(sys.argv[1:]))`` gets ``COMMAND BUNDLE.sftrace
[--overwrite]`` from one call, with the writers' rule of GUIDE.md (nothing is overwritten without
``--overwrite``) and one line for every kind of bad input. The examples/ agents use it.

It is the one place in ``stepfork.trace`` that prints: it is a script's ``main``, not a library call.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from stepfork.trace.errors import TraceStorageError

_OVERWRITE = "--overwrite"
_OPTIONS = (_OVERWRITE, "--help", "-h")


class _UsageError(Exception):
    """argparse found the command line wrong (its message is not shown: the usage line says it all)."""


class _Finished(Exception):
    """argparse is done before a command ran (``--help`` printed); ``status`` is the exit code."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that returns to its caller instead of leaving the interpreter."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise _Finished(status)


def record_main(
    argv: Sequence[str],
    commands: Mapping[str, Callable[..., Any]],
    *,
    prog: str | None = None,
    show: Callable[[Any], str] = json.dumps,
) -> int:
    """Run a recording script's command line ``COMMAND BUNDLE.sftrace [--overwrite]``; return its exit code.

    ``return record_main(argv, {"record": record_run})`` is a whole ``main()``: it parses ``argv``,
    calls ``commands[COMMAND](BUNDLE, overwrite=OVERWRITE)`` (``BUNDLE`` as typed, a ``str``;
    ``OVERWRITE`` True when ``--overwrite`` stands anywhere on the line) and prints ``show(result)`` on
    stdout. Bad input never raises; it prints one line on stderr and returns 2:

    - an unknown option: ``openai_agent.py: unknown option --overwite; did you mean --overwrite?``
      (the closest known option by ``difflib.get_close_matches``, else ``; the options are
      --overwrite, --help``; abbreviations are not accepted, so ``--over`` never means ``--overwrite``);
    - an unknown command close to a known one: ``... unknown command recrod; did you mean record?``,
      or the first few letters of several: ``... unknown command re; did you mean record or resume?``;
    - any other wrong line (a missing or extra argument, an unknown command unlike any):
      ``usage: python openai_agent.py record BUNDLE.sftrace [--overwrite]``;
    - the bundle exists and ``--overwrite`` was not given (the command raised ``TraceStorageError`` with
      code ``already_exists``, as ``record(..., overwrite=False)`` does before the agent runs):
      ``run.sftrace exists; pass --overwrite to replace it``;
    - any other ``TraceStorageError``: ``Cannot record to run.sftrace: <its message>``.

    ``-h`` / ``--help`` prints argparse's help on stdout and returns 0.

    Args:
        argv: the arguments after the script's name (``sys.argv[1:]``).
        commands: command name -> the function that records into the bundle, called as
            ``fn(bundle: str, overwrite=bool)``; its result is printed. The names in insertion order
            make the usage line (``record|resume``).
        prog: the script's name in messages; default the basename of ``sys.argv[0]``.
        show: turns the command's result into the printed text; default ``json.dumps``.

    Returns:
        0 when the command ran (or help was printed), 2 for bad input or a refused bundle.

    Raises:
        Whatever the command raises other than ``TraceStorageError`` (an agent's own failure is the
        script's to report, not a usage problem); ``ValueError`` if ``commands`` is empty.
    """
    if not commands:
        raise ValueError("record_main needs at least one command")
    name = prog or os.path.basename(sys.argv[0]) or "script.py"
    usage = f"python {name} {'|'.join(commands)} BUNDLE.sftrace [{_OVERWRITE}]"
    refusal = _unknown_option(argv) or _unknown_command(argv, commands)
    if refusal is not None:
        print(f"{name}: {refusal}", file=sys.stderr)
        return 2
    parser = _Parser(prog=f"python {name}", usage=usage, allow_abbrev=False)
    parser.add_argument("command", metavar="|".join(commands), help="what to record")
    parser.add_argument("bundle", metavar="BUNDLE.sftrace", help="the bundle directory to write")
    parser.add_argument(_OVERWRITE, action="store_true", help="replace an existing bundle")
    try:
        options = parser.parse_args(list(argv))
    except _UsageError:
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    except _Finished as finished:
        return finished.status
    if options.command not in commands:
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    try:
        print(show(commands[options.command](options.bundle, overwrite=options.overwrite)))
    except TraceStorageError as exc:  # record() refuses before the agent runs
        if exc.code == "already_exists":
            print(f"{options.bundle} exists; pass {_OVERWRITE} to replace it", file=sys.stderr)
        else:
            print(f"Cannot record to {options.bundle}: {exc}", file=sys.stderr)
        return 2
    return 0


def _unknown_option(argv: Sequence[str]) -> str | None:
    """``unknown option --overwite; did you mean --overwrite?`` (or the list of options when none is
    close) for the first option-like word of ``argv`` (before a ``--``) that is not an option, else None.
    Checked before argparse, which would report a missing argument instead when the typo took its place."""
    for word in argv:
        if word == "--":
            return None
        if word.startswith("-") and word != "-" and word.split("=", 1)[0] not in _OPTIONS:
            hint = _suggestion(word.split("=", 1)[0], _OPTIONS[:2]) or "; the options are --overwrite, --help"
            return f"unknown option {word}{hint}"
    return None


def _unknown_command(argv: Sequence[str], commands: Mapping[str, Any]) -> str | None:
    """``unknown command recrod; did you mean record?`` when the first word is no command but close to
    one, ``unknown command re; did you mean record or resume?`` when it begins several (abbreviations
    are not accepted, so a prefix is named, not guessed), else None (the usage line then says what is
    wrong)."""
    words = [word for word in argv if word != _OVERWRITE]
    if not words or words[0] in commands or words[0].startswith("-"):
        return None
    begun = [command for command in commands if command.startswith(words[0])]
    if len(begun) > 1:
        return f"unknown command {words[0]}; did you mean {', '.join(begun[:-1])} or {begun[-1]}?"
    hint = _suggestion(words[0], tuple(commands))
    return f"unknown command {words[0]}{hint}" if hint else None


def _suggestion(word: str, choices: tuple[str, ...]) -> str:
    """``; did you mean X?`` with the choice closest to ``word`` (difflib, cutoff 0.6), else ``""``."""
    close = difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean {close[0]}?" if close else ""
