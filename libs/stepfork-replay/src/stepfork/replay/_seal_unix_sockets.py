"""The network seal's rules for Unix sockets (docs/replay.md, "The seal's rules"): the name the seal
compares (:func:`unix_name`) and the sockets that are the process's own (:func:`is_own_unix`).

A part of the seal's rules (:mod:`stepfork.replay._seal_rules` says how a sealed child loads them by their
paths): standard library only, runnable on Python 3.8, its sibling parts imported relatively, never through
``stepfork``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing in every sealed child's start-up
if TYPE_CHECKING:
    from typing import Any

LOG_SOCKETS = frozenset(
    {"/dev/log", "/run/systemd/journal/socket", "/run/systemd/journal/dev-log"}
    | {"/var/run/syslog", "/var/run/log"}  # macOS, FreeBSD
)
"""The system log's sockets (``logging.handlers.SysLogHandler``, journald): where the agent's log lines go,
never where its input comes from; always open."""


def unix_name(address: Any) -> str | None:
    """The name of an ``AF_UNIX`` address as the seal compares it: a path as given (``str``, ``bytes`` or
    ``os.PathLike``), an abstract name (Linux: a leading NUL) as ``@name``, as ``ss`` and
    ``/proc/net/unix`` show it; None for an unnamed address (``''``: an unbound peer, a socketpair's) and
    for anything else."""
    if isinstance(address, (bytes, bytearray, os.PathLike)):
        try:
            address = os.fsdecode(os.fspath(address) if isinstance(address, os.PathLike) else bytes(address))
        except (TypeError, ValueError):
            return None
    if not isinstance(address, str) or not address:
        return None
    return "@" + address[1:] if address[0] == "\0" else address


def is_own_unix(name: str, also: tuple[int, ...] = ()) -> bool:
    """True for a Unix socket through which the process talks to itself or to ``multiprocessing``'s own
    processes, not to another program: the system log (:data:`LOG_SOCKETS`), a socket in a
    ``multiprocessing`` folder (``pymp-*``, where it names the listeners of the manager and forkserver
    processes it starts), or one this process holds bound itself (a listener it bound, read from Linux's
    ``/proc``; elsewhere only the first two), or one of the processes ``also`` names does (a sealed child
    names the replaying process: its tools talk back to it). A socket another process holds (a database's,
    Docker's, a server a test started) is not the process's own, whoever started that process."""
    if name in LOG_SOCKETS:
        return True
    folder = "" if name.startswith("@") else os.path.basename(os.path.dirname(os.path.abspath(name)))
    if folder.startswith("pymp-"):
        return True
    return _held_here(name, ("self", *also))


def _held_here(name: str, holders: tuple[int | str, ...]) -> bool:
    """True when a socket bound to ``name`` is held by one of ``holders`` (``"self"`` or pids; Linux: the
    inodes ``/proc/net/unix`` lists for the name among the descriptors of ``/proc/PID/fd``); False where
    ``/proc`` cannot be read."""
    names = {name, os.path.abspath(name)} if not name.startswith("@") else {name}
    inodes: set[str] = set()
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as table:
            next(table, None)  # the header
            for line in table:
                fields = line.rstrip("\n").split(None, 7)  # Num RefCount Protocol Flags Type St Inode Path
                if len(fields) == 8 and fields[7] in names:
                    inodes.add(f"socket:[{fields[6]}]")
    except OSError:
        return False
    for holder in holders if inodes else ():
        try:
            descriptors = os.listdir(f"/proc/{holder}/fd")
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(f"/proc/{holder}/fd/{descriptor}") in inodes:
                    return True
            except OSError:
                continue
    return False
