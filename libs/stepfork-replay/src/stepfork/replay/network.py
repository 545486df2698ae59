"""The network seal of replay (issues 11 and 29; docs/replay.md "The network is sealed").

While a ``ReplaySession`` with ``network="sealed"`` is active (the default in ``frozen``, ``forbidden`` and
``manual`` modes), no connection leaves the process: an outbound connection to **any** address, loopback
(``127.0.0.0/8``, ``::1``) and private ones included (issue 29: a model server or a test's fake provider on
``127.0.0.1`` is a dependency like any other), raises :class:`~stepfork.replay.errors.ReplayPolicyError`
(code ``network_sealed``) *before* a byte is sent, naming the host and port and how to instrument the call
or let it through. The error is also recorded as the session's divergence, so the CLI reports DIVERGED and
exit codes follow the spec even when the agent swallows it.

A Unix socket (``AF_UNIX``) is sealed too, except where the process talks to itself
(:func:`stepfork.replay._seal_unix_sockets.is_own_unix`): a socket it holds bound itself (a listener it
bound), one under its ``multiprocessing`` folder (its manager's and forkserver's listeners), the system log;
a local database's socket or ``/var/run/docker.sock`` is another program, refused like a TCP peer.

What stays open: ``socket.socketpair`` (asyncio's self-pipe, ``multiprocessing``; emulated over loopback
where the platform has no native pair), pipes, the address families other than ``AF_INET``, ``AF_INET6``
and ``AF_UNIX`` (netlink: the machine's own kernel), a name resolved to bind a server (``AI_PASSIVE``), a
numeric address or ``localhost`` being resolved (no query leaves the machine: the connection that follows
is checked), and replies a server of this process sends on a connection it accepted (:func:`_inbound`).

Hooks (what Python gives; installed while at least one sealed session is active, removed after, or for the
rest of the process's life with :func:`seal_process`, as in a ``stepfork check`` worker):

- ``socket.getaddrinfo`` (and the older ``gethostbyname``/``gethostbyname_ex``): a name that is neither
  local nor allowed is refused before it is resolved (a DNS query is network traffic too); the addresses
  of an allowed name are allowed in turn (with the allowed port, if one was named);
- ``socket.socket.connect`` / ``connect_ex``: every TCP/UDP connection, blocking or not. asyncio's
  ``loop.sock_connect``/``create_connection`` and every HTTP library end there; a refused socket is closed
  (it never connected; ``socket.create_connection`` closes its socket on ``OSError`` only);
- ``socket.socket.sendto`` / ``sendmsg`` with an address: a datagram needs no connection (a metrics
  client, a DNS library), so one to an address not allowed is refused before it is sent;
- ``socket.socket.send`` / ``sendall`` / ``sendmsg`` and ``ssl.SSLSocket.send`` / ``sendall`` / ``write``
  on a connected socket: a connection opened *before* the session (an HTTP client's keep-alive pool, a
  socket connected by an earlier live run in the same process) needs no new connect, so the first send on
  each socket checks its peer; one not allowed is refused before the bytes are sent. TLS is checked before
  encryption (``SSLSocket``; asyncio's TLS writes through the plain socket's ``send``). The verdict is kept
  per socket until the next connect or the next change of sealed sessions;
- asyncio's transports (``write``/``writelines``/``sendto``) and ``loop.sock_sendfile``/``sendfile``
  (:mod:`stepfork.replay.network_asyncio`): the same peer check on entry, before asyncio's own
  ``try``/``except``, which would turn the refusal into "Fatal write error on socket transport" and a
  ``ConnectionResetError`` at the agent's next read.

IPv4-mapped IPv6 addresses (``::ffff:127.0.0.1``, a dual-stack socket's view of an IPv4 peer) are read as
their IPv4 address.

``allow_hosts`` opens exactly what it names: ``HOST`` (every port of a name or an address) or
``HOST:PORT`` (one port), IPv6 addresses in brackets (``[::1]:8000``; a bare ``::1`` is every port)
(:func:`parse_allowed_host`).
``network="open"`` (the default in ``live`` and ``hybrid``, whose LLM calls need it) installs nothing.

A connection to a known telemetry collector (:func:`stepfork.trace.http_calls.is_telemetry_host`: CrewAI's
anonymous telemetry, on by default) is refused the same way but is not a divergence: the session notes it
(``note_telemetry_refused``) and the report counts it apart (issue 30).

A child process forked while a sealed session is active (``os.fork``, a ``multiprocessing`` pool with the
``fork`` start method) keeps the seal; a refusal there is written to a pipe the parent reads when the
session ends, and becomes the session's divergence too (:mod:`stepfork.replay.network_fork`).

A thread the replay starts (``threading.Thread.start`` from the session's context, or from a thread it
started) stays sealed for its whole life (:mod:`stepfork.replay.network_threads`): the session waits for
those still running when its run ends, and one that sends after the session ended is refused all the same
(a late refusal: noted on the session and warned, the verdict being already given).

Beside these hooks (docs/replay.md, "The seal's rules"): an audit hook applies the same rules inside the C
functions, past the hooks (:mod:`stepfork.replay.network_audit`); a Python child process the replay
starts seals itself from the environment :func:`_carry_to_children` gives it, and any other child is
refused before it starts (``child_process_refused``, :func:`_refuse_child`) unless ``allow_commands`` let
it run (:mod:`stepfork.replay.network_children`); and the entrypoint's module is imported under the seal
(:mod:`stepfork.replay.network_import`).

Where each part lives (all re-exported here, the import path callers and tests use): this module installs
and removes the hooks and keeps the sessions' seals (:func:`seal`, :func:`unseal`, :func:`seal_process`,
:func:`is_sealed`); :mod:`stepfork.replay.network_policy` parses the settings (:func:`network_for`,
:func:`parse_allowed_host`, :func:`parse_allowed_command`); :mod:`stepfork.replay.network_seals` holds
the seals in force and the rule every hook asks (``_allowed``); :mod:`stepfork.replay.network_sockets`
the ``socket`` hooks; :mod:`stepfork.replay.network_dns` the name-resolution hooks;
:mod:`stepfork.replay.network_refusals` what a refusal raises and where it is recorded.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Iterable
from typing import Any

from stepfork.replay import network_fork, network_seals, network_threads
from stepfork.replay._seal_hosts import Allowance, format_host
from stepfork.replay.network_asyncio import asyncio_hooks
from stepfork.replay.network_dns import (
    _checked_name as _checked_name,
)
from stepfork.replay.network_dns import (
    _getaddrinfo,
    _gethostbyname,
    _gethostbyname_ex,
    _getnameinfo,
)
from stepfork.replay.network_errors import reported_error, sealed_error
from stepfork.replay.network_policy import NETWORK_CHOICES as NETWORK_CHOICES
from stepfork.replay.network_policy import SEALED_MODES as SEALED_MODES
from stepfork.replay.network_policy import network_for as network_for
from stepfork.replay.network_policy import parse_allowed_command as parse_allowed_command
from stepfork.replay.network_policy import parse_allowed_host as parse_allowed_host
from stepfork.replay.network_refusals import _current_seal as _current_seal
from stepfork.replay.network_refusals import _importing as _importing
from stepfork.replay.network_refusals import _refuse as _refuse
from stepfork.replay.network_refusals import _refuse_child as _refuse_child
from stepfork.replay.network_refusals import _refuse_unseen as _refuse_unseen
from stepfork.replay.network_seals import Seal as Seal
from stepfork.replay.network_seals import _allowed as _allowed
from stepfork.replay.network_seals import _allowed_by_name as _allowed_by_name
from stepfork.replay.network_seals import (
    _drop_finished,
    _installed,
    _original,
    _peers_allowed,
    _seals,
)
from stepfork.replay.network_seals import _seals_here as _seals_here
from stepfork.replay.network_seals import suspended as suspended
from stepfork.replay.network_sockets import (
    _SSL_HOOKS,
    _connect,
    _connect_ex,
    _send,
    _sendfile,
    _sendmsg,
    _sendto,
    _socketpair,
)
from stepfork.replay.network_sockets import _check_connect as _check_connect
from stepfork.replay.network_sockets import _check_peer as _check_peer
from stepfork.replay.network_sockets import _sendall as _sendall

__all__ = ["Allowance", "format_host", "sealed_error"]  # re-exported: callers import them from here


def _hooks() -> list[tuple[Any, str, Any]]:
    """``(owner, attribute, wrapper)`` of every hook, for what this process has (sendmsg: POSIX; TLS
    sockets send from OpenSSL's code, past ``socket.send``, so they are checked before encryption, when
    ssl is loaded: a TLS connection opened later connects under the seal, and is checked there)."""
    hooks: list[tuple[Any, str, Any]] = [
        (socket.socket, "connect", _connect),
        (socket.socket, "connect_ex", _connect_ex),
        (socket.socket, "sendto", _sendto),
        (socket.socket, "send", _send),
        (socket.socket, "sendall", _sendall),
        (socket.socket, "sendfile", _sendfile),
        (socket, "getaddrinfo", _getaddrinfo),
        (socket, "gethostbyname", _gethostbyname),
        (socket, "gethostbyname_ex", _gethostbyname_ex),
        (socket, "getnameinfo", _getnameinfo),
        (socket, "socketpair", _socketpair),
    ]
    if hasattr(socket.socket, "sendmsg"):
        hooks.append((socket.socket, "sendmsg", _sendmsg))
    ssl = sys.modules.get("ssl")
    if ssl is not None:
        hooks += [(ssl.SSLSocket, name, wrapper) for name, wrapper in _SSL_HOOKS.items()]
    return hooks + asyncio_hooks(_check_peer, _check_connect, _original)


_lasting = False
"""True once :func:`_install_lasting` ran."""


def _install_lasting() -> None:
    """Install, once for the process's life, the hooks that do nothing while no seal is in force for the
    calling thread: ``threading.Thread.start`` (:mod:`stepfork.replay.network_threads`) and
    ``subprocess.Popen.__init__`` (:func:`stepfork.replay.network_children.popen_hook`). Installing and
    removing them with every session would cost each replay two more class changes (about 5 us of a 100 us
    session); left in place, a thread start or a ``Popen`` outside a replay pays one look at the seals.
    Called with ``_lock`` held."""
    global _lasting
    if _lasting:
        return
    _lasting = True
    import subprocess

    from stepfork.replay import network_children

    for owner, name, wrapper in (
        (threading.Thread, "start", network_threads.start_hook(_seal_starting_thread, _original)),
        (subprocess.Popen, "__init__", network_children.popen_hook(_child_seal_value, _original)),
    ):
        _original[f"{owner.__name__}.{name}"] = getattr(owner, name)
        setattr(owner, name, wrapper)


def _seal_starting_thread() -> Seal | None:
    """The seal a thread about to be started by the calling thread belongs to: the active session's, when
    the caller runs in its context, else the seal of the session that started the caller; None for a
    thread started by code the replay did not start (a library's own background thread)."""
    with network_seals._lock:
        seals = list(_seals)
    if not seals:
        return None
    from stepfork.trace import boundary

    active = boundary.active_handler()
    here = os.getpid()
    own = [seal for seal in seals if seal.pid == here and seal.session is not None]
    found = next((seal for seal in own if seal.session is active and not seal.ended), None)
    if found is None and own:
        current = threading.current_thread()
        found = next((seal for seal in own if current in seal.threads), None)
    return found


def _child_seal_value() -> str | None:
    """The ``STEPFORK_SEAL`` value a child process started by the calling thread must carry (the seals in
    force for it, :func:`_seals_here`), or None when none is."""
    from stepfork.replay import network_children

    seals = _seals_here()
    if not seals:
        return None
    mode, allowed, commands = _children_settings(seals)
    return network_children.seal_value(mode, allowed, commands)


def _children_settings(seals: list[Seal]) -> tuple[str, list[Allowance], list[str]]:
    """``(mode, allowed (host, port) pairs, allowed commands)`` a child of ``seals`` inherits."""
    mode = next((getattr(s.session, "mode", None) for s in seals if s.session is not None), None)
    allowed = [pair for s in seals for pool in (s.allowed, s.addresses) for pair in pool]
    commands = sorted({command for s in seals for command in s.commands})
    return str(mode or "frozen"), allowed, commands


def _install() -> None:
    """Install every hook of :func:`_hooks` not installed yet, and the audit hook behind them
    (:mod:`stepfork.replay.network_audit`, once per process); called with ``_lock`` held."""
    from stepfork.replay import network_audit

    network_audit.install(sys.modules[__name__])
    _install_lasting()
    done = {(owner, name) for owner, name, _ in _installed}
    for owner, name, wrapper in _hooks():
        if (owner, name) in done:
            continue
        original = getattr(owner, name)
        # kept after unseal too: a thread already inside a wrapper when the last session ends still finds
        # the original it calls (popping it raised KeyError in such a thread)
        _original[f"{owner.__name__}.{name}"] = original
        _installed.append((owner, name, original))
        setattr(owner, name, wrapper)


def seal(session: Any, allow_hosts: Iterable[str] = (), allow_commands: Iterable[str] = ()) -> Seal:
    """Seal the network for ``session`` (install the hooks if none is installed), letting ``allow_hosts``
    through and ``allow_commands`` start; return the handle for :func:`unseal`.

    Raises:
        ValueError: a malformed ``allow_hosts`` or ``allow_commands`` entry.
    """
    handle = Seal(session, allow_hosts, allow_commands)
    with network_seals._lock:
        if not _installed:
            _install()
        _seals.append(handle)
        _peers_allowed.clear()  # what is allowed changed
        _carry_to_children()
    return handle


def _carry_to_children() -> None:
    """Put the active seals' allowances in the environment Python children inherit, or give the
    environment back when none is active (:mod:`stepfork.replay.network_children`; written only when they
    change: a process sealed for life writes it once); called with ``_lock`` held. An ended seal is carried
    by the children its own threads start only (:func:`_child_seal_value`)."""
    from stepfork.replay import network_children

    active = [seal for seal in _seals if not seal.ended]
    if not active:
        network_children.release()
        return
    network_children.carry(*_children_settings(active))


_process_seal: Seal | None = None


def seal_process() -> None:
    """Seal the network for the rest of this process's life, whatever sessions come and go.

    For a process that exists only to replay frozen, sealed sessions (a ``stepfork check`` worker, forked
    from its zygote): the hooks are installed once, here, instead of being installed when each session
    starts and removed when it ends. Installing them sets attributes on ``socket.socket`` and asyncio's
    classes, which invalidates the interpreter's attribute caches for them: about 30 us of a 0.45 ms
    replay of the quickstart agent (docs/performance.md, "Run J"). Each session's own seal still adds its
    ``allow_hosts`` and ``allow_commands``, and a refusal is still recorded as the divergence of the session
    it happens in. Between sessions only the process's own sockets stay reachable, and no child process
    the seal cannot reach starts, where before the seal there was no seal at all.

    Idempotent; a later call installs the hooks of modules loaded since (``ssl``, asyncio's transports:
    :func:`_hooks`). There is no way back: this process never replays with the network open.
    """
    global _process_seal
    with network_seals._lock:
        _install()
        if _process_seal is None:
            _process_seal = Seal(None, ())
            _seals.append(_process_seal)
            _peers_allowed.clear()
            _carry_to_children()


def unseal(handle: Seal, *, keep_threads: bool = True) -> None:
    """Undo :func:`seal` for one session; the hooks go when the last seal goes. A refusal a child process
    reported (forked: :func:`stepfork.replay.network_fork.child_refusals`; started:
    :func:`stepfork.replay.network_children.refusals`)
    becomes the session's divergence first. With ``keep_threads`` (the default), the seal stays in force
    for the threads the session started that are still running (``Seal.ended``), until they end;
    ``keep_threads=False`` lifts it for them too (``fork``'s run going live)."""
    diverge = getattr(handle.session, "_diverge", None)
    if diverge is not None:
        from stepfork.replay.network_children import refusals

        mode = getattr(handle.session, "mode", "frozen")
        for report in network_fork.child_refusals():
            diverge(reported_error(report, mode, child=True))
        note = getattr(handle.session, "note_unsealed_child", None)
        for report in refusals():
            if isinstance(report, dict) and "allowed" in report:  # a child's own child allow_commands let run
                if note is not None:
                    note(str(report["allowed"]))
                continue
            diverge(reported_error(report, mode, child="started"))
    with network_seals._lock:
        if handle in _seals and not handle.ended:
            if keep_threads and handle.threads and network_threads.alive(handle.threads):
                handle.ended = True
                network_seals._ended += 1
            else:
                _seals.remove(handle)
        _drop_finished()  # and the hooks with the last seal
        _carry_to_children()
        if not any(s.session is not None and not s.ended for s in _seals):
            network_fork.close_pipe()
        _peers_allowed.clear()


def is_sealed() -> bool:
    """True while a sealed replay session (or the process's own seal) is in force in this process; a seal
    kept only for the threads of an ended session does not count."""
    with network_seals._lock:
        return any(not seal.ended for seal in _seals)
