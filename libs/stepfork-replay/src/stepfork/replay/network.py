"""The network seal of replay (issues 11 and 29; docs/replay.md "The network is sealed").

While a ``ReplaySession`` with ``network="sealed"`` is active (the default in ``frozen``, ``forbidden`` and
``manual`` modes), no connection leaves the process: an outbound connection to **any** address, loopback
(``127.0.0.0/8``, ``::1``) and private ones included (issue 29: a model server or a test's fake provider on
``127.0.0.1`` is a dependency like any other), raises :class:`~stepfork.replay.errors.ReplayPolicyError`
(code ``network_sealed``) *before* a byte is sent, naming the host and port and how to instrument the call
or let it through. The error is also recorded as the session's divergence, so the CLI reports DIVERGED and
exit codes follow the spec even when the agent swallows it.

A Unix socket (``AF_UNIX``) is sealed too, except where the process talks to itself
(:func:`stepfork.replay._seal_rules.is_own_unix`): a socket it holds bound itself (a listener it bound),
one under its ``multiprocessing`` folder (its manager's and forkserver's listeners), the system log; a
local database's socket or ``/var/run/docker.sock`` is another program, refused like a TCP peer.

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
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

from stepfork.replay import _seal_rules, network_fork, network_threads
from stepfork.replay._seal_rules import (
    Allowance,
    allows,
    format_host,
    host_of,
    is_address,
    is_local,
    is_own_unix,
    normal_host,
    unix_name,
)
from stepfork.replay._seal_rules import port_of as _port
from stepfork.replay.errors import ReplayPolicyError
from stepfork.replay.network_asyncio import asyncio_hooks
from stepfork.replay.network_errors import child_refused_error, reported_error, sealed_error
from stepfork.trace.http_calls import is_telemetry_host

__all__ = ["Allowance", "format_host", "sealed_error"]  # re-exported: callers import them from here

SEALED_MODES = frozenset({"frozen", "forbidden", "manual"})
"""Modes whose default is ``network="sealed"``; ``live`` and ``hybrid`` default to ``"open"``."""
NETWORK_CHOICES = ("sealed", "open")


def network_for(mode: str, network: str | None) -> str:
    """The network policy of a session: ``network`` when given, else the mode's default.

    Raises:
        ValueError: ``network`` is not ``"sealed"``, ``"open"`` or None.
    """
    if network is None:
        return "sealed" if mode in SEALED_MODES else "open"
    if network not in NETWORK_CHOICES:
        raise ValueError(f"network must be 'sealed' or 'open', got {network!r}")
    return network


def parse_allowed_command(text: str) -> str:
    """One ``allow_commands`` entry (``--allow-command``): a program's name (``curl``: every ``curl`` the
    replay starts) or a path (``/usr/bin/curl``: that file only), stripped.

    Raises:
        ValueError: an empty entry, or a name holding a space; the message names the entry.
    """
    given = str(text).strip()
    if not given or (" " in given and "/" not in given):
        raise ValueError(
            f"invalid allowed command {text!r}: expected a program's name or path, for example curl or "
            "/usr/bin/curl"
        )
    return given


def parse_allowed_host(text: str) -> Allowance:
    """``(host, port)`` of one ``allow_hosts`` entry (``--allow-host``): ``HOST`` (a name or an address:
    every port), ``HOST:PORT``, ``[IPV6]`` or ``[IPV6]:PORT``; a bare IPv6 address (``::1``) is every port
    of it; a Unix socket's path (``/var/run/docker.sock``, starting with ``/``) or abstract name
    (``@name``), kept as given, with port None. The host is normalized as the seal compares it
    (:func:`_normal_host`).

    Raises:
        ValueError: an empty entry, a port that is not 1-65535, or brackets around something that is not
            an IPv6 address; the message names the entry and the accepted forms.
    """
    given = str(text).strip()
    if given.startswith(("/", "@")) and len(given) > 1:
        return given, None  # a Unix socket: a path is case-sensitive, and has no port
    forms = (
        "expected HOST, HOST:PORT, [IPV6]:PORT or a Unix socket's path, for example 127.0.0.1:8000 or "
        "[::1]:8000"
    )
    host, port_text = given, None
    if given.startswith("["):
        close = given.find("]")
        host, rest = given[1 : max(close, 1)], given[close + 1 :] if close > 0 else ""
        if close < 0 or (rest and not rest.startswith(":")) or ":" not in host:
            raise ValueError(f"invalid allowed host {given!r}: {forms}")
        port_text = rest[1:] if rest else None
    elif given.count(":") == 1:
        host, port_text = given.split(":")
    host = normal_host(host)
    if not host:
        raise ValueError(f"invalid allowed host {given!r}: {forms}")
    port: int | None = None
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"invalid port in allowed host {given!r}: {forms}")
        port = int(port_text)
    return host, port


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


def _allowed_by_name(host: str, port: int | None) -> bool:
    """:func:`_allowed`, after resolving the allowed names of every sealed session (see
    :meth:`Seal.resolve_names`)."""
    with _lock:
        seals = list(_seals)
    for seal in seals:
        seal.resolve_names()
    return _allowed(host, port)


def _inbound(sock: socket.socket) -> bool:
    """True when ``sock`` was accepted by a server on this machine (a listening socket holds its local
    port): what it sends is a reply to a connection that came in, not one leaving the process. Read from
    Linux's ``/proc/net/tcp``/``tcp6``; False where they cannot be read (then the socket is sealed as if
    it were outbound)."""
    if sock.type != socket.SOCK_STREAM:
        return False
    try:
        port = f":{sock.getsockname()[1]:04X}"
    except (OSError, IndexError, TypeError):
        return False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                next(handle, None)  # the header
                for line in handle:
                    fields = line.split()
                    if len(fields) > 3 and fields[3] == "0A" and fields[1].endswith(port):  # 0A: LISTEN
                        return True
        except OSError:
            continue
    return False


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


def _current_seal() -> tuple[Seal | None, Seal | None]:
    """``(this process's seal a refusal or a note goes to, or None; a seal inherited from the parent by a
    forked child, or None)``: the seal of the session that started the calling thread, else the active
    session's, else (a thread the session's context did not reach) the first session's, else an
    entrypoint's import (:mod:`stepfork.replay.network_import`), else None (the process's own seal,
    :func:`seal_process`, between sessions)."""
    seals = _seals_here()
    if not seals:
        return None, None
    from stepfork.trace import boundary

    active = boundary.active_handler()
    here = os.getpid()
    own = [s for s in seals if s.pid == here]
    current = threading.current_thread()
    seal = next((s for s in own if s.session is not None and current in s.threads), None)
    seal = seal or next((s for s in own if s.session is active and active is not None and not s.ended), None)
    seal = seal or next((s for s in own if s.session is not None and not _importing(s) and not s.ended), None)
    seal = seal or next((s for s in own if s.session is not None and not s.ended), None)
    inherited = next((s for s in seals if s.pid != here and s.session is not None), None)
    return seal, inherited


def _deliver(seal: Seal | None, error: ReplayPolicyError) -> None:
    """Record ``error`` on ``seal``'s session: its divergence while it runs, a late refusal after it ended
    (a thread it started, refused after the verdict: :meth:`ReplaySession.note_late_refusal`)."""
    session = getattr(seal, "session", None)
    if seal is not None and seal.ended:
        note = getattr(session, "note_late_refusal", None)
        if note is not None:
            note(error)
        return
    diverge = getattr(session, "_diverge", None)
    if diverge is not None:
        diverge(error)


def _refuse(host: str, port: Any, what: str = "the connection to") -> None:
    """Raise ``network_sealed`` for ``host:port`` (``what``: the kind of traffic, as ``the reverse lookup
    of``) and record it as the session's divergence; in a child forked during a replay (its sessions are
    the parent's), tell the parent (:func:`_child_refusals`)."""
    if not _seals:
        return
    seal, inherited = _current_seal()
    where = format_host(host, port)
    telemetry = is_telemetry_host(host)
    if seal is None and inherited is not None:
        if not telemetry:
            network_fork.tell_parent({"refused": "network", "where": where, "what": what})
        raise sealed_error(where, getattr(inherited.session, "mode", "frozen"), child=True, what=what)
    session = getattr(seal, "session", None)
    context = getattr(session, "seal_context", None)
    error = sealed_error(where, getattr(session, "mode", "frozen"), context=context, what=what)
    if telemetry:  # refused all the same, but a library's telemetry is not the agent's behaviour
        note = getattr(session, "note_telemetry_refused", None)
        if note is not None and not getattr(seal, "ended", False):
            note(where)
        raise error
    _deliver(seal, error)
    raise error


def _refuse_child(program: str, line: list[str], reason: str) -> None:
    """Raise (and record, as :func:`_refuse` does) ``child_process_refused`` for the child process
    ``program`` (its command ``line``) about to start, refused for ``reason``
    (:func:`stepfork.replay._seal_rules.child_refusal`)."""
    # both None: the process's own seal, between sessions: refused all the same, recorded nowhere
    seal, inherited = _current_seal()
    if seal is None and inherited is not None:
        network_fork.tell_parent({"refused": "command", "program": program, "reason": reason})
        mode = getattr(inherited.session, "mode", "frozen")
        raise child_refused_error(program, line, reason, mode, child=True)
    session = getattr(seal, "session", None)
    mode = getattr(session, "mode", "frozen")
    error = child_refused_error(program, line, reason, mode, context=getattr(session, "seal_context", None))
    _deliver(seal, error)
    raise error


def _refuse_unseen(description: str) -> None:
    """Raise (and record, as :func:`_refuse` does) ``network_sealed`` for network traffic whose destination
    the seal cannot see (``description``: ``looking up libc's connect() through ctypes``)."""
    seal, inherited = _current_seal()
    session = getattr(seal or inherited, "session", None)
    how = "a child process forked during the replay: " if seal is None and inherited is not None else ""
    context = getattr(session, "seal_context", None)
    error = ReplayPolicyError(
        f"network sealed during {getattr(session, 'mode', 'frozen')} replay: {how}"
        f"{f'{context}: ' if context else ''}{description} was refused: the seal cannot see where such a "
        "call goes. Make the call through Python's socket module (its connections are checked against "
        "allow_hosts), serve it from the recording (@trace_tool around the function that makes it), or "
        "replay with network='open' (--allow-network)",
        code="network_sealed",
    )
    if seal is None and inherited is not None:
        network_fork.tell_parent({"refused": "unseen", "where": description})
        raise error
    _deliver(seal, error)
    raise error


def _importing(seal: Seal) -> bool:
    """True for the seal of an entrypoint's import (:mod:`stepfork.replay.network_import`), which a
    refusal in a thread without context goes to only when no replay session is sealed."""
    return getattr(seal.session, "seal_context", None) is not None


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


_UNIX = getattr(socket, "AF_UNIX", None)


def _check_connect(sock: socket.socket, address: Any) -> None:
    family = sock.family
    if family == _UNIX:
        _check_unix(unix_name(address))
        return
    if family not in (socket.AF_INET, socket.AF_INET6):
        return  # the other local families (netlink...) stay open
    found = host_of(address)
    if found is not None and not _allowed(*found) and not _allowed_by_name(*found):
        _refuse(*found)


def _check_unix(name: str | None) -> None:
    """Refuse a connection (or a datagram) to the Unix socket ``name`` unless it is unnamed, the process's
    own (:func:`stepfork.replay._seal_rules.is_own_unix`) or allowed (``allow_hosts`` holds its path)."""
    if name is None or _allowed(name, None) or is_own_unix(name):
        return
    _refuse(name, None, what="the connection to the Unix socket")


def _check_unix_peer(sock: socket.socket) -> None:
    """:func:`_check_peer` for a connected Unix socket: its peer is checked as a connection to it would be,
    unless the socket is the accepting end of a listener this process holds (a reply)."""
    try:
        peer = unix_name(sock.getpeername())
    except OSError:
        return
    if peer is None or _allowed(peer, None) or is_own_unix(peer):
        return
    with contextlib.suppress(OSError):
        own = unix_name(sock.getsockname())
        if own is not None and is_own_unix(own):
            return
    _refuse(peer, None, what="the connection to the Unix socket")


def _check_peer(sock: socket.socket) -> None:
    """Refuse a send on a connected socket whose peer is not allowed (a connection opened before the seal:
    no connect of it was checked). The first send per socket asks the kernel for the peer; an allowed one
    is remembered."""
    if (sock in _peers_allowed and not _ended) or sock in _plumbing_sockets:
        return
    family = sock.family
    if family == _UNIX:
        _check_unix_peer(sock)
        with contextlib.suppress(TypeError):
            _peers_allowed[sock] = True
        return
    if family not in (socket.AF_INET, socket.AF_INET6):
        return
    try:
        peer = sock.getpeername()
    except OSError:  # not connected: the send itself fails as it would
        return
    found = host_of(peer)
    if found is not None and not _allowed(*found) and not _allowed_by_name(*found) and not _inbound(sock):
        _refuse(*found)
    with contextlib.suppress(TypeError):  # a socket that cannot be weakly referenced: checked every time
        _peers_allowed[sock] = True


def _socketpair(*args: Any, **kwargs: Any) -> tuple[socket.socket, socket.socket]:
    # the process talking to itself (asyncio's self-pipe, multiprocessing): emulated over loopback where
    # the platform has no native pair (Windows), so its connect and sends are let through
    _plumbing.active = True
    try:
        pair: tuple[socket.socket, socket.socket] = _original["socket.socketpair"](*args, **kwargs)
    finally:
        _plumbing.active = False
    for sock in pair:
        with contextlib.suppress(TypeError):
            _plumbing_sockets.add(sock)
    return pair


def _refused_connect(sock: socket.socket, address: Any) -> None:
    """:func:`_check_connect`, closing ``sock`` when it refuses: the socket never connected and is of no
    use, and its creator's cleanup (``socket.create_connection``, asyncio) closes sockets on ``OSError``
    only, which the refusal is not, so it would be left open."""
    try:
        _check_connect(sock, address)
    except ReplayPolicyError:
        sock.close()
        raise


def _connect(self: socket.socket, address: Any) -> None:
    _refused_connect(self, address)
    _peers_allowed.pop(self, None)  # a datagram socket may connect again, elsewhere
    _original["socket.connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _refused_connect(self, address)
    _peers_allowed.pop(self, None)
    return int(_original["socket.connect_ex"](self, address))


def _send(self: socket.socket, data: Any, *args: Any) -> int:
    _check_peer(self)
    return int(_original["socket.send"](self, data, *args))


def _sendall(self: socket.socket, data: Any, *args: Any) -> None:
    _check_peer(self)
    _original["socket.sendall"](self, data, *args)


def _ssl_send(self: Any, data: Any, *args: Any) -> int:
    _check_peer(self)
    return int(_original["SSLSocket.send"](self, data, *args))


def _ssl_sendall(self: Any, data: Any, *args: Any) -> None:
    _check_peer(self)
    _original["SSLSocket.sendall"](self, data, *args)


def _ssl_write(self: Any, data: Any) -> int:
    _check_peer(self)
    return int(_original["SSLSocket.write"](self, data))


def _sendfile(self: socket.socket, file: Any, *args: Any, **kwargs: Any) -> int:
    # socket.sendfile sends with os.sendfile on the descriptor, past send()
    _check_peer(self)
    return int(_original["socket.sendfile"](self, file, *args, **kwargs))


_SSL_HOOKS = {"send": _ssl_send, "sendall": _ssl_sendall, "write": _ssl_write}


def _sendto(self: socket.socket, data: Any, *args: Any) -> int:
    # sendto(data, address) or sendto(data, flags, address)
    if args:
        _check_connect(self, args[-1])
    return int(_original["socket.sendto"](self, data, *args))


def _sendmsg(self: socket.socket, buffers: Any, *args: Any) -> int:
    # sendmsg(buffers[, ancdata[, flags[, address]]])
    if len(args) >= 3 and args[2] is not None:
        _check_connect(self, args[2])
    else:
        _check_peer(self)
    return int(_original["socket.sendmsg"](self, buffers, *args))


def _checked_name(host: Any, port: Any, flags: int = 0) -> str | None:
    """The normalized name of a host about to be resolved, refused when it needs a query (not an address,
    not a local name) and is not allowed. A name resolved to bind a server (``AI_PASSIVE``) is not a
    connection and is never refused."""
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
    if not isinstance(name, str):
        return None
    name = normal_host(name)
    if flags & socket.AI_PASSIVE or is_address(name) or is_local(name):
        return name
    number = _port(port)
    if not _allowed(name, number):
        _refuse(name, number)
    return name


def _allow_resolved(name: str | None, port: Any, addresses: Iterable[Any]) -> None:
    """The addresses an allowed name resolved to are allowed in turn, on the port its allowance names."""
    if name is None or is_address(name):
        return
    number = _port(port)
    with _lock:
        for seal in _seals:
            allowed, only = seal.port_of(name, number)
            if allowed:
                seal.addresses.update((normal_host(str(address)), only) for address in addresses)


@contextlib.contextmanager
def _vetted() -> Iterator[None]:
    """While the block calls a C function this module already checked, the audit hook
    (:mod:`stepfork.replay.network_audit`) does not check it again (its event lacks the flags)."""
    vetted = _seal_rules.vetted
    before = getattr(vetted, "name", False)
    vetted.name = True
    try:
        yield
    finally:
        vetted.name = before


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    # getaddrinfo(host, port, family=0, type=0, proto=0, flags=0)
    flags = kwargs.get("flags", args[3] if len(args) > 3 else 0)
    name = _checked_name(host, port, flags if isinstance(flags, int) else 0)
    with _vetted():
        result = _original["socket.getaddrinfo"](host, port, *args, **kwargs)
    _allow_resolved(name, port, (info[4][0] for info in result))
    return result


def _gethostbyname(host: Any) -> str:
    name = _checked_name(host, None)
    with _vetted():
        address = str(_original["socket.gethostbyname"](host))
    _allow_resolved(name, None, [address])
    return address


def _gethostbyname_ex(host: Any) -> Any:
    name = _checked_name(host, None)
    with _vetted():
        result = _original["socket.gethostbyname_ex"](host)
    _allow_resolved(name, None, result[2])
    return result


def _getnameinfo(sockaddr: Any, flags: int) -> Any:
    # numbers only (NI_NUMERICHOST): no query, which the audit event (it carries no flags) cannot tell
    if isinstance(flags, int) and flags & socket.NI_NUMERICHOST:
        with _vetted():
            return _original["socket.getnameinfo"](sockaddr, flags)
    return _original["socket.getnameinfo"](sockaddr, flags)


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
    with _lock:
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


_installed: list[tuple[Any, str, Any]] = []  # (owner, attribute, original) while the hooks are in place


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


def _uninstall() -> None:
    """Put back every original :func:`_install` replaced; called with ``_lock`` held."""
    for owner, name, original in reversed(_installed):
        setattr(owner, name, original)
    _installed.clear()


def seal(session: Any, allow_hosts: Iterable[str] = (), allow_commands: Iterable[str] = ()) -> Seal:
    """Seal the network for ``session`` (install the hooks if none is installed), letting ``allow_hosts``
    through and ``allow_commands`` start; return the handle for :func:`unseal`.

    Raises:
        ValueError: a malformed ``allow_hosts`` or ``allow_commands`` entry.
    """
    handle = Seal(session, allow_hosts, allow_commands)
    with _lock:
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
    with _lock:
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
    global _ended
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
    with _lock:
        if handle in _seals and not handle.ended:
            if keep_threads and handle.threads and network_threads.alive(handle.threads):
                handle.ended = True
                _ended += 1
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
    with _lock:
        return any(not seal.ended for seal in _seals)
