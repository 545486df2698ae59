"""Stepfork's network seal in a Python child process of a sealed replay (stepfork.replay.network_children).

A replay that seals the network puts the folder ``_seal_site`` first on ``PYTHONPATH`` and the seal in
``STEPFORK_SEAL`` (JSON: ``mode``, ``allowed`` ``[host, port or null]`` pairs, ``commands``
(``allow_commands``), ``report``: a file, ``{ppid}`` in it for the pid of the process that started this
one), so every Python interpreter it starts runs ``_seal_site/sitecustomize.py`` at start-up, before the
child's own code. That entry, valid on every Python, loads this module by its path (Python 3.8 and later:
the audit hooks of PEP 578) and calls :func:`install`; when anything here fails, the entry refuses the
child rather than let it run unsealed (docs/replay.md, "The seal's rules").

:func:`install` adds an audit hook that refuses what the replay's seal refuses: a connection, a datagram or
a DNS query to an address, name or Unix socket not allowed (loopback included), raising ``PermissionError``
as a firewall would, and a child process of its own the seal cannot reach (a program that is not Python, a
Python started with ``-I``), raising ``PermissionError`` as the system refusing to run it would; it appends
each refusal to the report file, which the replay reads as its divergence. Standard library only, fast,
and runnable on Python 3.8 (no runtime use of 3.9+ syntax such as ``dict[str, str]`` outside annotations):
the rules come from ``stepfork/replay/_seal_rules.py`` and its parts, loaded by their paths without
importing Stepfork (:func:`load_rules`).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing in every sealed child's start-up
if TYPE_CHECKING:
    from typing import Any


PACKAGE = "_stepfork_seal"
"""The name this folder is loaded under in a child (:func:`load_rules`): not ``stepfork.replay``."""


def load_rules() -> Any:
    """The seal's rules, ``_seal_rules.py`` and the parts it imports, loaded by their paths without importing
    Stepfork (:mod:`stepfork.replay._seal_rules` says how): a bare package :data:`PACKAGE` whose
    ``__path__`` is this file's folder, then its module ``_seal_rules``.

    Returns:
        The module ``_stepfork_seal._seal_rules``.

    Raises:
        ImportError: a part is missing or fails to load (the entry refuses the child then).
    """
    import importlib
    import types

    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE, "Stepfork's seal's rules, loaded by their paths")
        package.__path__ = [os.path.dirname(os.path.abspath(__file__))]
        sys.modules[PACKAGE] = package
    return importlib.import_module(PACKAGE + "._seal_rules")


def install(settings: dict[str, Any], replaying: int) -> None:
    """Install the seal ``settings`` describe in this process (module docstring).

    Args:
        settings: the seal as ``STEPFORK_SEAL`` carries it, its ``report`` resolved to this process's
            report file (``{ppid}`` replaced by the entry, ``_seal_site/sitecustomize.py``).
        replaying: the pid of the process the replay runs in (whose own Unix sockets stay open to this one).

    Raises:
        Whatever loading the rules or installing the hook raises (the entry refuses the child then).
    """
    import json

    rules = load_rules()
    rules.keep_loader_baseline()  # as this child started: its parent's seal judged them already
    mode = str(settings.get("mode") or "frozen")
    report = settings.get("report")
    commands = frozenset(str(command) for command in settings.get("commands") or ())
    pairs = settings.get("allowed") or ()
    allowed = {(str(host), port if isinstance(port, int) else None) for host, port in pairs}
    resolved: set[tuple[str, int | None]] = set()
    names = [(host, port) for host, port in allowed if not rules.is_address(host)]
    state = {"resolving": False, "resolved": not names}

    def permitted(host: str, port: int | None) -> bool:
        if bool(rules.allows((allowed, resolved), host, port)):
            return True
        if state["resolved"]:
            return False
        state["resolved"] = state["resolving"] = True  # the allowed names' addresses, once (lazily)
        try:
            import socket

            for name, only in names:
                try:
                    infos = socket.getaddrinfo(name, None)
                except OSError:
                    continue
                resolved.update((rules.normal_host(str(info[4][0])), only) for info in infos)
        finally:
            state["resolving"] = False
        return bool(rules.allows((allowed, resolved), host, port))

    def tell(line: dict[str, str]) -> None:
        if isinstance(report, str):
            try:
                with open(report, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps({key: value[:200] for key, value in line.items()}) + "\n")
            except OSError:
                pass

    def refuse(where: str, what: str = "the connection to") -> None:
        tell({"refused": "network", "where": where, "what": what})
        raise PermissionError(
            13,
            f"network sealed during {mode} replay: a child process started during the replay: {what} {where} "
            "was refused before anything was sent (Stepfork)",
        )

    def judge_child(event: str, args: tuple[object, ...]) -> None:
        if event == "subprocess.Popen":  # (executable, args, cwd, env)
            executable, argv, env = args[0], args[1], args[3] if len(args) > 3 else None
            if isinstance(env, dict) and not rules.carries_seal(env):  # this process is sealed for life
                keys_bytes = any(isinstance(key, bytes) for key in env)
                path = os.fsdecode(env.get(b"PYTHONPATH" if keys_bytes else "PYTHONPATH") or "")
                entries = rules.SITE if not path else rules.SITE + os.pathsep + path
                value = os.environ.get("STEPFORK_SEAL", "")
                if keys_bytes:
                    env[b"STEPFORK_SEAL"], env[b"PYTHONPATH"] = os.fsencode(value), os.fsencode(entries)
                else:
                    env["STEPFORK_SEAL"], env["PYTHONPATH"] = value, entries
        elif event == "os.system":
            executable, argv, env = "sh", ["sh", "-c", os.fsdecode(args[0]) if args else ""], None  # type: ignore[arg-type]
        else:
            rest = args[1:] if event == "os.spawn" else args
            executable, argv = rest[0] if rest else None, rest[1] if len(rest) > 1 else ()
            env = rest[2] if len(rest) > 2 else None
        program, _, verdict = rules.child_refusal(executable, argv, env, commands)
        if verdict == rules.ALLOWED:
            tell({"allowed": program})
        elif verdict not in (rules.SEALED, rules.LOCAL):
            tell({"refused": "command", "program": program, "reason": verdict})
            raise PermissionError(
                13,
                f"child process refused during {mode} replay: a child process started during the replay: "
                f"the command {program!r} was refused before it started: {verdict} (Stepfork)",
            )

    def own_unix(name: str) -> bool:
        return bool(rules.is_own_unix(name, (replaying,)))

    def name_checked(host: object, port: object) -> None:
        if state["resolving"] or not isinstance(host, (str, bytes)):
            return
        name = rules.normal_host(host.decode("ascii", "replace") if isinstance(host, bytes) else host)
        if rules.is_address(name) or rules.is_local(name):
            return
        number = rules.port_of(port)
        if not permitted(name, number):
            refuse(rules.format_host(name, number))

    children = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn")

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
            sock, address = args[0], args[1] if len(args) > 1 else None
            family = getattr(sock, "family", None)
            if address is None:
                return
            if family == 1:  # AF_UNIX
                name = rules.unix_name(address)
                if name is not None and not permitted(name, None) and not own_unix(name):
                    refuse(name, "the connection to the Unix socket")
                return
            if family not in (2, 10, 23, 30):  # AF_INET, AF_INET6
                return
            found = rules.host_of(address)
            if found is not None and not permitted(*found):
                refuse(rules.format_host(*found))
        elif event in children:
            judge_child(event, args)
        elif event in ("socket.getaddrinfo", "socket.gethostbyname"):
            name_checked(args[0] if args else None, args[1] if len(args) > 1 else None)
        elif event in ("socket.gethostbyaddr", "socket.getnameinfo") and args:
            target = args[0]
            found = rules.host_of(target) if isinstance(target, tuple) else None
            host = found[0] if found else target
            if isinstance(host, (str, bytes)):
                text = rules.normal_host(host.decode("ascii", "replace") if isinstance(host, bytes) else host)
                if rules.is_local(text) or rules.is_own_name(text):
                    return
                if not rules.is_address(text):
                    name_checked(text, None)
                elif not permitted(text, None):
                    refuse(text, "the reverse lookup (a DNS query) of")

    sys.addaudithook(hook)
