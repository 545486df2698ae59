"""What the network seal takes for Python (docs/decisions.md, "what the seal takes for Python"): a
program read from its file (:func:`program_file`: compiled, a script and its ``#!`` line, a version
manager's shim), a Python interpreter (:func:`is_python`), and the options of a Python command line that
keep the seal out, read as CPython reads them (:func:`unsealable_option`).

A part of the seal's rules (:mod:`stepfork.replay._seal_rules` says how a sealed child loads them by their
paths): standard library only, runnable on Python 3.8, its sibling parts imported relatively, never through
``stepfork``.
"""

from __future__ import annotations

import os
import sys

from ._seal_environment import variable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing in every sealed child's start-up
if TYPE_CHECKING:
    from typing import Any

_PYTHON = r"python(\d+(\.\d+)*)?[a-z]?(\.exe)?"
"""A Python interpreter's file name (``python``, ``python3.11``, ``python3.13t``, ``python.exe``). Compiled
on first use: ``re`` is not imported at the start-up of every sealed child."""


def which(name: str, env: Any) -> str | None:
    """The file ``name`` runs as (a path as given; a bare name looked up on the child's ``PATH``)."""
    if os.sep in name or (os.altsep and os.altsep in name):
        return name
    entries = variable(env, "PATH") if env is not None else None
    search = os.fsdecode(entries) if entries is not None else os.environ.get("PATH", os.defpath)
    for folder in search.split(os.pathsep):
        candidate = os.path.join(folder or os.curdir, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


_BINARY_MAGIC = (
    b"\x7fELF",  # Linux, BSD
    b"\xfe\xed\xfa\xce",
    b"\xce\xfa\xed\xfe",
    b"\xfe\xed\xfa\xcf",
    b"\xcf\xfa\xed\xfe",  # Mach-O
    b"\xca\xfe\xba\xbe",  # a macOS universal binary
    b"MZ",  # Windows
)
"""How a compiled program's file starts: such a file named like Python (:data:`_PYTHON`) is Python."""
_SHIM = r"^[ \t]*exec[ \t]+[\"']?(\S*/)?(pyenv|asdf)[\"']?[ \t]+exec[ \t]"
"""The line of a version manager's shim that hands over to the interpreter it picks (pyenv: ``exec
"/root/.pyenv/libexec/pyenv" exec "$program" "$@"``; asdf: ``exec asdf exec "python3" "$@"``)."""
MAX_INTERPRETERS = 4
"""How many ``#!`` interpreters deep a script is followed (Linux stops at 4 too); deeper is refused."""

BINARY = "binary"
SCRIPT = "script"
SHIM = "shim"


def program_file(path: str, env: Any) -> tuple[str | None, list[str]]:
    """What the program ``path`` (as started, looked up on the ``PATH`` of ``env``) is, read from its file.

    Returns:
        ``(kind, interpreter)``: :data:`BINARY` (a compiled program: this interpreter's own file, an ELF,
        Mach-O or PE file), :data:`SHIM` (a pyenv/asdf shim named like Python, in a ``shims`` folder:
        judged as the Python it hands over to), :data:`SCRIPT` with the words of its ``#!`` line as Linux
        reads them (the interpreter, then the rest of the line as one word when there is one), or None
        (not found, unreadable, or another kind of file): the interpreter's words are empty but for a
        script.
    """
    found = which(path, env)
    if found is None:
        return None, []
    try:
        if os.path.realpath(found) == os.path.realpath(sys.executable):
            return BINARY, []
        if not os.path.isfile(found):  # a FIFO or a device would block the read; exec refuses them anyway
            return None, []
        with open(found, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None, []
    if head.startswith(_BINARY_MAGIC):
        return BINARY, []
    if not head.startswith(b"#!"):
        return None, []
    if _is_shim(found, head):
        return SHIM, []
    first = head[2:256].split(b"\n", 1)[0].decode("utf-8", "replace").strip(" \t\r")
    interpreter, _, rest = first.replace("\t", " ").partition(" ")
    rest = rest.strip(" ")
    return SCRIPT, [interpreter, rest] if rest else [interpreter] if interpreter else []


def _is_shim(found: str, head: bytes) -> bool:
    """True for a version manager's shim named like Python (pyenv's, asdf's: a short shell script in a
    ``shims`` folder that hands over to the interpreter the manager picks, which then seals itself)."""
    import re

    if not re.fullmatch(_PYTHON, os.path.basename(found).lower()) or len(head) >= 4096:
        return False
    if os.path.basename(os.path.dirname(os.path.abspath(found))) != "shims":
        return False
    return re.search(_SHIM.encode(), head, re.MULTILINE) is not None


def is_python(path: str, env: Any = None) -> bool:
    """True when ``path`` (a program as started, on the child's ``PATH`` in ``env``) is a Python
    interpreter by its file: this interpreter's own file, a compiled program named like Python
    (``python3.11``), or a version manager's shim named so (:func:`program_file`). A script is not, whatever
    its name: :func:`._seal_commands.child_refusal` judges it by its ``#!`` line."""
    import re

    kind, _ = program_file(path, os.environ if env is None else env)
    if kind == SHIM:
        return True
    if kind != BINARY:
        return False
    found = which(path, os.environ if env is None else env) or path
    names = {os.path.basename(path), os.path.basename(os.path.realpath(found))}
    same = os.path.realpath(found) == os.path.realpath(sys.executable)
    return same or any(re.fullmatch(_PYTHON, name.lower()) for name in names)


_PYTHON_VALUED = "WX"
"""Python's short options whose value is the rest of the word or the next word (CPython's getopt)."""
_PYTHON_LONG_VALUED = frozenset({"--check-hash-based-pycs"})
"""Python's long options whose value is the next word."""


def unsealable_option(arguments: list[str]) -> str | None:
    """The first option of a Python command line (``arguments``: after the interpreter) that keeps the seal
    out: ``-I`` (isolated: no environment, no site), ``-E`` (no ``PYTHON*`` variables) or ``-S`` (no
    ``site``, so no ``sitecustomize``); None when there is none. Read as CPython reads its options
    (Python/getopt.c): flags combine (``-sI``), ``-W``/``-X`` take the rest of the word or the next word,
    ``--check-hash-based-pycs`` the next word, and the options end at ``-c``, ``-m``, ``-``, ``--`` or the
    script. (``-s`` leaves ``PYTHONPATH`` and ``site`` alone: the seal still runs.)"""
    remaining = iter(arguments)
    for word in remaining:
        if word in ("-", "--") or not word.startswith("-"):
            return None
        if word.startswith("--"):
            if word in _PYTHON_LONG_VALUED:
                next(remaining, None)
            continue
        flags = word[1:]
        for index, flag in enumerate(flags):
            if flag in "IES":
                return f"-{flag}"
            if flag in "cm":
                return None  # what follows is the code or the module
            if flag in _PYTHON_VALUED:
                if index == len(flags) - 1:
                    next(remaining, None)
                break
    return None
