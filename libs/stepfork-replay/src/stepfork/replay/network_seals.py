"""The seals in force in this process (part of :mod:`stepfork.replay.network`): :class:`Seal`, one sealed
session's allowance; the process's list of them and the lock that guards it; the question every hook asks
(:func:`_allowed`: may this host and port be reached from the calling thread?); the originals the hooks
replaced (``_original``, ``_installed``) and their removal with the last seal; the fork rule for the lock.

State every other part of the seal reads: ``_lock`` is replaced in a forked child and ``_ended`` and
``_suspended`` are counters, so other modules read them as attributes of this module, never through a
``from`` import (which would keep the value of the moment).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

from stepfork.replay import network_fork, network_threads
from stepfork.replay._seal_hosts import Allowance, allows, is_address, normal_host
from stepfork.replay.network_policy import parse_allowed_command, parse_allowed_host


class Seal:
    """One sealed session's allowance: the ``(host, port)`` pairs it lets through (port None: every port),
    the addresses its allowed names resolved to, and the programs it lets start (``commands``).

    ``threads`` are the threads the session started (:mod:`stepfork.replay.network_threads`); once the
    session has ended (``ended``), the seal stays in force for them alone, until they end."""

    def __init__(self, session: Any, allow_hosts: Iterable[str], allow_commands: Iterable[str] = ()) -> None:
        self.session = session
        self.pid = os.getpid()  # a forked child inherits the seal; its refusals go to this process
        given = [str(host) for host in allow_hosts if str(host).strip()]
        self.allowed: frozenset[Allowance] = frozenset(parse_allowed_host(host) for host in given)
        self.commands: frozenset[str] = frozenset(parse_allowed_command(c) for c in allow_commands)
        self.addresses: set[Allowance] = set()
        self.names_resolved = False
        self.threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        self.ended = False

    def applies(self, current: threading.Thread) -> bool:
        """True when this seal is in force for the thread ``current``: while its session runs, for every
        thread; after, for the threads the session started."""
        return not self.ended or current in self.threads

    def resolve_names(self) -> None:
        """Allow the addresses of the allowed host *names* (once): a connection to an allowed name may have
        been resolved before the session, or the agent connects to the address the name stands for."""
        if self.names_resolved:
            return
        self.names_resolved = True
        for host, port in self.allowed:
            if is_address(host):
                continue
            with contextlib.suppress(OSError, UnicodeError):
                infos = _original["socket.getaddrinfo"](host, None)
                self.addresses.update((normal_host(str(info[4][0])), port) for info in infos)

    def allows(self, host: str, port: int | None) -> bool:
        """True when ``host`` (normalized, a name or an address) on ``port`` is allowed by this session."""
        return allows((self.allowed, self.addresses), host, port)

    def port_of(self, host: str, port: int | None) -> tuple[bool, int | None]:
        """``(allowed, the port restriction)`` for addresses a name resolves to: ``(True, None)`` for every
        port, ``(True, p)`` for one, ``(False, None)`` when the name is not allowed here."""
        if (host, None) in self.allowed:
            return True, None
        if port is not None and (host, port) in self.allowed:
            return True, port
        return False, None


_lock = threading.Lock()
_seals: list[Seal] = []
"""Every seal in force: the active sessions', the process's own (:func:`seal_process`), and ended ones
still holding threads (``Seal.ended``)."""
_ended = 0
"""How many seals of :data:`_seals` are ended (kept for their threads)."""
_original: dict[str, Any] = {}
_peers_allowed: weakref.WeakKeyDictionary[socket.socket, bool] = weakref.WeakKeyDictionary()
"""Connected sockets whose peer was checked and allowed under the current seals (emptied when they change)."""
_plumbing_sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
"""Sockets of a ``socketpair`` (the process talking to itself): never checked."""
_plumbing = threading.local()
_installed: list[tuple[Any, str, Any]] = []  # (owner, attribute, original) while the hooks are in place


def _allowed_by_name(host: str, port: int | None) -> bool:
    """:func:`_allowed`, after resolving the allowed names of every sealed session (see
    :meth:`Seal.resolve_names`)."""
    with _lock:
        seals = list(_seals)
    for seal in seals:
        seal.resolve_names()
    return _allowed(host, port)


def _seals_here() -> list[Seal]:
    """The seals in force for the calling thread: every seal, except an ended one this thread is not of
    (an ended seal whose threads have all ended is dropped here, and the hooks with the last seal)."""
    with _lock:
        seals = list(_seals)
        if not _ended:
            return seals
        _drop_finished()
    current = threading.current_thread()
    return [seal for seal in seals if seal.applies(current)]


def _drop_finished() -> None:
    """Drop the ended seals none of whose threads is alive (the hooks go with the last seal); called with
    ``_lock`` held."""
    global _ended
    for seal in [seal for seal in _seals if seal.ended and not network_threads.alive(seal.threads)]:
        _seals.remove(seal)
        _ended -= 1
    if not _seals:
        _uninstall()


def _allowed(host: str, port: int | None) -> bool:
    seals = _seals_here()
    if not seals or _suspended or getattr(_plumbing, "active", False):
        return True
    return any(seal.allows(host, port) for seal in seals)


_suspended = 0
"""How many :func:`suspended` blocks are running: while one is, the seal lets everything through."""


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Let every connection through while the block runs: Stepfork itself reading a bundle from object
    storage (``load_source`` of a URL) in a process sealed for life (a ``stepfork check`` worker, whose next
    bundle lies behind ``s3://``). Process-wide, because fsspec's filesystems connect from a thread of their
    own; it runs before the replay's session starts, so no call of the agent is in flight."""
    global _suspended
    with _lock:
        _suspended += 1
        _peers_allowed.clear()
    try:
        yield
    finally:
        with _lock:
            _suspended -= 1
            _peers_allowed.clear()  # what the fetch connected is checked again from now on


def _uninstall() -> None:
    """Put back every original :func:`_install` replaced; called with ``_lock`` held."""
    for owner, name, original in reversed(_installed):
        setattr(owner, name, original)
    _installed.clear()


def _has_session_here() -> bool:
    """True when a seal of a session of this process is in force (a fork now makes a child that reports)."""
    here = os.getpid()
    return any(seal.session is not None and seal.pid == here for seal in _seals)


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(
        before=lambda: network_fork.before_fork(_has_session_here()),
        after_in_child=_after_fork_in_child,
    )
