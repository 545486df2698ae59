"""The network seal's rules for a child process's environment (docs/replay.md, "The seal's rules"): the
seal it carries (:data:`ENV`, :data:`SITE`, :func:`carries_seal`), what ``env ... CMD`` runs it with
(:func:`env_form`), and the loader's variables a child may not change (:func:`loader_change`).

A part of the seal's rules (:mod:`stepfork.replay._seal_rules` says how a sealed child loads them by their
paths): standard library only, runnable on Python 3.8, its sibling parts imported relatively, never through
``stepfork``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing in every sealed child's start-up
if TYPE_CHECKING:
    from typing import Any

ENV = "STEPFORK_SEAL"
"""The environment variable a sealed child reads its seal from (JSON: ``mode``, ``allowed``, ``commands``,
``report``)."""
SITE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_seal_site")
"""The folder put first on a child's ``PYTHONPATH``: it holds only ``sitecustomize.py``."""

_ENV_SKIPPED = frozenset({"-v", "--debug"})
"""``env``'s options that change nothing about the program it runs."""


def env_form(arguments: list[str], env: Any) -> tuple[list[str], Any] | None:
    """The command ``env ARGUMENTS`` runs and the environment it runs it with (``env`` given: a mapping),
    as GNU and BSD ``env`` read them: ``-i``/``-``/``--ignore-environment`` (empty), ``-u NAME``/
    ``--unset=NAME``, ``NAME=VALUE``, ``-S STRING``/``--split-string=STRING`` (split into words, as a
    ``#!/usr/bin/env -S python3 -E`` line needs), ``-C DIR``/``--chdir=DIR``; None for anything else (no
    command, an option not read here, a split string with ``$`` or ``\\``): the seal refuses ``env`` then."""
    import shlex

    remaining = list(arguments)
    changed = dict(env) if env is not None else dict(os.environ)
    while remaining:
        word = remaining.pop(0)
        if word in ("-i", "-", "--ignore-environment"):
            changed = {}
        elif word in _ENV_SKIPPED:
            continue
        elif word in ("-u", "-C") or word.startswith(("-u", "--unset=", "-C", "--chdir=")):
            value = word.split("=", 1)[1] if "=" in word else word[2:] if len(word) > 2 else None
            if value is None:
                if not remaining:
                    return None
                value = remaining.pop(0)
            if word.startswith(("-u", "--unset=")):
                for key in (value, value.encode()):
                    changed.pop(key, None)
        elif word.startswith(("-S", "--split-string=")):
            text = word.split("=", 1)[1] if word.startswith("--") else word[2:]
            if not text and remaining:
                text = remaining.pop(0)
            if "$" in text or "\\" in text:
                return None
            try:
                remaining = shlex.split(text) + remaining
            except ValueError:
                return None
        elif word.startswith("-"):
            return None
        elif "=" in word:
            name, _, value = word.partition("=")
            bytes_keys = any(isinstance(key, bytes) for key in changed)
            changed[name.encode() if bytes_keys else name] = value.encode() if bytes_keys else value
        else:
            return [word, *remaining], changed
    return None


def carries_seal(env: Any) -> bool:
    """True when the environment ``env`` (a mapping, str or bytes keys) holds the seal: :data:`ENV` and
    :data:`SITE` on ``PYTHONPATH``."""
    entries = variable(env, "PYTHONPATH") or ""
    return bool(variable(env, ENV)) and SITE in os.fsdecode(entries).split(os.pathsep)


def variable(env: Any, name: str) -> str | bytes | None:
    """``env[name]`` of an environment mapping whose keys are ``str`` or ``bytes`` (``os.environb``), or
    None."""
    for key in (name, name.encode()):
        try:
            value = env.get(key)
        except (AttributeError, TypeError):  # os.environ refuses bytes keys
            continue
        if isinstance(value, (str, bytes)):
            return value
    return None


LOADER_VARIABLES = (
    "LD_PRELOAD",
    "LD_AUDIT",
    "LD_LIBRARY_PATH",  # glibc's, musl's (ld.so)
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "DYLD_FRAMEWORK_PATH",  # macOS's (dyld)
)
"""Environment variables that make the system's loader run other code in any program it starts (a library
preloaded, audited, or found first): native code, which no audit hook sees, so a child started with one of
them changed is refused (docs/decisions.md, "the loader's variables")."""
_loader_baseline: dict[str, str] | None = None
"""Those variables as the process had them when its seal started (:func:`keep_loader_baseline`)."""


def _loader_values(env: Any) -> dict[str, str]:
    found = {}
    for name in LOADER_VARIABLES:
        value = variable(env, name)
        if value:
            found[name] = os.fsdecode(value)
    return found


def keep_loader_baseline() -> None:
    """Keep this process's :data:`LOADER_VARIABLES` as they are now: a child whose environment sets one to
    another value is refused (:func:`loader_change`). Called when the seal starts (a user whose whole shell
    sets ``LD_PRELOAD`` to an allocator has every child inherit it unchanged)."""
    global _loader_baseline
    _loader_baseline = _loader_values(os.environ)


def loader_change(env: Any) -> str | None:
    """The first of :data:`LOADER_VARIABLES` the environment ``env`` (a mapping) sets otherwise than this
    process had it when its seal started (unset and empty are the same), or None."""
    baseline = _loader_baseline if _loader_baseline is not None else _loader_values(os.environ)
    values = _loader_values(env)
    for name in LOADER_VARIABLES:
        if values.get(name) != baseline.get(name):
            return name
    return None
