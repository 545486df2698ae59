"""The network seal's verdict on a child process (docs/replay.md, "The seal's rules"): :func:`child_refusal`
judges a command line (a shell's simple command, ``env``, a script's ``#!`` interpreter, a local
program, a Python) against the replay's ``allow_commands`` (:func:`allows_command`).

A part of the seal's rules (:mod:`stepfork.replay._seal_rules` says how a sealed child loads them by their
paths): standard library only, runnable on Python 3.8, its sibling parts imported relatively, never through
``stepfork``.
"""

from __future__ import annotations

import os

from ._seal_environment import carries_seal, env_form, loader_change
from ._seal_local_programs import LOCAL_PROGRAMS, NOT_READ_ONLY, local_form
from ._seal_python import MAX_INTERPRETERS, SCRIPT, is_python, program_file, unsealable_option, which

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing in every sealed child's start-up
if TYPE_CHECKING:
    from typing import Any

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash"})
"""Shells whose ``-c COMMAND`` is judged as the program it runs when ``COMMAND`` is a simple command."""
SHELL_BUILTINS = frozenset({"exit", "true", "false", ":", "echo", "printf", "test", "[", "pwd", "cd"})
"""A shell's own commands that run no program and reach nothing (``sh -c "exit 0"``): started freely."""

_SPECIAL = r"[;&|<>()$`\\\n\r*?\[\]{}~!#]"
"""What makes a shell command more than one program with its arguments (lists, pipes, redirections,
expansions, globs, escapes). Compiled on first use, as :mod:`._seal_python`'s name pattern: ``re`` is not
imported at the start-up of every sealed child."""

SEALED = "sealed"
""":func:`child_refusal`'s verdict on a Python child that inherits the seal."""
LOCAL = "local"
"""... on a program of :data:`LOCAL_PROGRAMS` (started, not counted)."""
ALLOWED = "allowed"
"""... on a program the replay's ``allow_commands`` name (started unsealed, and counted on the report)."""


def words(argv: Any) -> list[str]:
    """A command line as a list of words: ``argv`` as a sequence, or a string split as a shell would."""
    if isinstance(argv, (str, bytes)):
        import shlex

        text = os.fsdecode(argv)
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()
    try:
        return [os.fsdecode(word) for word in argv]
    except TypeError:
        return []


def _simple_command(line: str) -> list[str] | None:
    """The words of ``line`` when it is one program with its arguments, else None."""
    import re

    if re.search(_SPECIAL, line):
        return None
    import shlex

    try:
        found = shlex.split(line)
    except ValueError:
        return None
    return found if found and "=" not in found[0] else None


def allows_command(commands: Any, program: str, path: str) -> bool:
    """True when ``commands`` (``allow_commands`` entries: a program's name, or a path with a ``/``) let
    ``program`` (its name) started as ``path`` run."""
    for entry in commands:
        if os.sep in entry or (os.altsep and os.altsep in entry):
            if os.path.normpath(entry) == os.path.normpath(path):
                return True
        elif entry == program:
            return True
    return False


def child_refusal(
    executable: Any, argv: Any, env: Any, commands: Any, depth: int = 0
) -> tuple[str, list[str], str]:
    """Judge a child process about to start while sealed (docs/replay.md, "The seal's rules").

    Args:
        executable: the file to run, or None (the first word of ``argv``).
        argv: the command line (a sequence of words, or a shell's command string).
        env: the child's environment (a mapping), or None for this process's.
        commands: the ``allow_commands`` in force (names or paths).
        depth: how many ``#!`` interpreters and ``env`` wrappers led here (a script is judged as its
            interpreter running it).

    Returns:
        ``(program, command words, verdict)``: the program's name as the report shows it (for a shell
        running one simple command, that command's program), the words of what it runs, and
        :data:`SEALED` (a Python child that inherits the seal), :data:`LOCAL`, :data:`ALLOWED`, or the
        reason it is refused, one clause (``a program that is not Python cannot be sealed ...``).
    """
    line = words(argv)
    path = os.fsdecode(executable) if isinstance(executable, (str, bytes, os.PathLike)) else ""
    path = path or (line[0] if line else "")
    program = os.path.basename(path) or "?"
    environment = os.environ if env is None else env
    loader = loader_change(environment)
    if loader is not None:
        if allows_command(commands, program, path):
            return program, line, ALLOWED
        return program, line, f"its environment sets {loader}, which loads other code into it (native code)"
    if program in SHELLS and len(line) >= 3 and line[1] == "-c":
        inner = _simple_command(line[2])
        if inner is not None and not allows_command(commands, program, path):
            if inner[0] in SHELL_BUILTINS:
                return inner[0], inner, LOCAL
            line, path = inner, inner[0]
            program = os.path.basename(path)
    local, inner = local_form(program, line[1:]) if program in LOCAL_PROGRAMS else (False, None)
    if local:
        return program, line, LOCAL
    if allows_command(commands, program, path):
        return program, line, ALLOWED
    if inner is not None:  # `ip netns exec NAME CMD`: judged as CMD
        return child_refusal(None, inner, env, commands, depth)
    if program in LOCAL_PROGRAMS:
        return program, line, NOT_READ_ONLY
    if program == "env" and depth < MAX_INTERPRETERS:  # `env [NAME=VALUE...] CMD`: judged as CMD
        wrapped = env_form(line[1:], environment)
        if wrapped is not None:
            return child_refusal(None, wrapped[0], wrapped[1], commands, depth + 1)
    kind, interpreter = program_file(path, environment)
    if kind == SCRIPT and interpreter:  # judged as `INTERPRETER [ARGUMENT] SCRIPT ARGS...`, as run
        if depth >= MAX_INTERPRETERS:
            return program, line, "its #! interpreters nest too deep to be judged"
        script = which(path, environment) or path
        verdict = child_refusal(None, [*interpreter, script, *line[1:]], env, commands, depth + 1)[2]
        return program, line, verdict
    if is_python(path, environment):
        option = unsealable_option(line[1:])
        if option is not None:
            return program, line, f"{option} makes Python ignore the environment the seal travels in"
        if not carries_seal(environment):
            return program, line, "it was started with an environment (env=) that drops the seal"
        return program, line, SEALED
    return program, line, "a program that is not Python cannot be sealed: it could reach anything"
