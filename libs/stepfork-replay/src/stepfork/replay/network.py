"""The network seal of replay (issue 11; docs/replay.md "The network is sealed").

While a ``ReplaySession`` with ``network="sealed"`` is active (the default in ``frozen``, ``forbidden`` and
``manual`` modes), no connection leaves the process: an outbound connection to anything but loopback
(``127.0.0.0/8``, ``::1``, ``localhost``), the unspecified address or a Unix socket raises
:class:`~stepfork.replay.errors.ReplayPolicyError` (code ``network_sealed``) *before* a byte is sent,
naming the host and port and how to instrument the call. The error is also recorded as the session's
divergence, so the CLI reports it and exit codes follow the spec even when the agent swallows it.

Hooks (what Python gives; installed while at least one sealed session is active, removed after, or for the
rest of the process's life with :func:`seal_process`, as in a ``stepfork check`` worker):

- ``socket.getaddrinfo`` (and the older ``gethostbyname``/``gethostbyname_ex``): a name that is neither
  local nor allowed is refused before it is resolved (a DNS query is network traffic too); the addresses
  of an allowed name are allowed in turn;
- ``socket.socket.connect`` / ``connect_ex``: every TCP/UDP connection, blocking or not. asyncio's
  ``loop.sock_connect``/``create_connection`` and every HTTP library end there;
- ``socket.socket.sendto`` / ``sendmsg`` with an address: a datagram needs no connection (a metrics
  client, a DNS library), so one to a remote address is refused before it is sent;
- ``socket.socket.send`` / ``sendall`` / ``sendmsg`` and ``ssl.SSLSocket.send`` / ``sendall`` / ``write``
  on a connected socket: a connection opened *before* the session (an HTTP client's keep-alive pool, a
  socket connected by an earlier live run in the same process) needs no new connect, so the first send on
  each socket checks its peer; a remote one is refused before the bytes are sent. TLS is checked before
  encryption (``SSLSocket``; asyncio's TLS writes through the plain socket's ``send``). The verdict is kept
  per socket until the next connect or the next change of sealed sessions;
- asyncio's transports (``write``/``writelines``/``sendto``) and ``loop.sock_sendfile``/``sendfile``
  (:mod:`stepfork.replay.network_asyncio`): the same peer check on entry, before asyncio's own
  ``try``/``except``, which would turn the refusal into "Fatal write error on socket transport" and a
  ``ConnectionResetError`` at the agent's next read.

Loopback includes IPv4-mapped IPv6 loopback (``::ffff:127.0.0.1``, a dual-stack socket's view of a local
server).

``allow_hosts`` lists host names or IP addresses that stay reachable (a database on another host, a
service the test really needs). ``network="open"`` (the default in ``live`` and ``hybrid``, whose LLM
calls need it) installs nothing.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import sys
import threading
import weakref
from collections.abc import Iterable
from typing import Any

from stepfork.replay.errors import ReplayPolicyError

SEALED_MODES = frozenset({"frozen", "forbidden", "manual"})
"""Modes whose default is ``network="sealed"``; ``live`` and ``hybrid`` default to ``"open"``."""
NETWORK_CHOICES = ("sealed", "open")
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


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


class Seal:
    """One sealed session's allowance: host names and addresses it lets through."""

    def __init__(self, session: Any, allow_hosts: Iterable[str]) -> None:
        self.session = session
        self.hosts = frozenset(h.strip().lower().rstrip(".") for h in allow_hosts if h.strip())
        self.addresses: set[str] = set()
        self.names_resolved = False

    def resolve_names(self) -> None:
        """Allow the addresses of the allowed host *names* (once): a connection opened before the session
        to an allowed name was resolved then, not under the seal, so its peer address is not known yet."""
        if self.names_resolved:
            return
        self.names_resolved = True
        for host in self.hosts:
            if _is_address(host):
                continue
            with contextlib.suppress(OSError, UnicodeError):
                infos = _original["socket.getaddrinfo"](host, None)
                self.addresses.update(str(info[4][0]).lower() for info in infos)

    def allows(self, host: str) -> bool:
        """True when ``host`` (a name or an address) is allowed by this session."""
        return host in self.hosts or host in self.addresses


_lock = threading.Lock()
_seals: list[Seal] = []
_original: dict[str, Any] = {}
_peers_allowed: weakref.WeakKeyDictionary[socket.socket, bool] = weakref.WeakKeyDictionary()
"""Connected sockets whose peer was checked and allowed under the current seals (emptied when they change)."""


def _is_local(host: str) -> bool:
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 (ipaddress counts it from 3.13 only)
    if mapped is not None:
        address = mapped
    return address.is_loopback or address.is_unspecified


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _allowed_by_name(host: str) -> bool:
    """:func:`_allowed`, after resolving the allowed names of every sealed session (see
    :meth:`Seal.resolve_names`)."""
    with _lock:
        seals = list(_seals)
    for seal in seals:
        seal.resolve_names()
    return _allowed(host)


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


def _allowed(host: str) -> bool:
    with _lock:
        seals = list(_seals)
    return not seals or _is_local(host) or any(seal.allows(host) for seal in seals)


def _refuse(host: str, port: Any) -> None:
    """Raise ``network_sealed`` for ``host:port`` and record it as the session's divergence."""
    with _lock:
        seals = list(_seals)
    if not seals:
        return
    from stepfork.trace import boundary

    active = boundary.active_handler()
    # the active session's, else (a thread the session's context did not reach) the first session's, else
    # the process's own (seal_process: between sessions)
    seal = next((s for s in seals if s.session is active and active is not None), None)
    seal = seal or next((s for s in seals if s.session is not None), seals[0])
    mode = getattr(seal.session, "mode", "frozen")
    where = f"{host}:{port}" if port is not None else host
    error = ReplayPolicyError(
        f"network sealed during {mode} replay: the connection to {where} was refused before anything was "
        "sent. This call is not instrumented, so its answer is not in the recording: instrument its client "
        "(instrument_openai(client), instrument_anthropic(client), instrument_httpx(client)) or the "
        f"function making it (@trace_tool); or let it through with allow_hosts=[{host!r}] "
        f"(--allow-host {host}) or network='open' (--allow-network)",
        code="network_sealed",
    )
    diverge = getattr(seal.session, "_diverge", None)
    if diverge is not None:
        diverge(error)
    raise error


def _host_of(address: Any) -> tuple[str, Any] | None:
    """``(host, port)`` of an AF_INET/AF_INET6 address tuple; None for Unix sockets and the rest."""
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], (str, bytes)):
        host = address[0].decode("ascii", "replace") if isinstance(address[0], bytes) else address[0]
        return host.lower().rstrip("."), address[1]
    return None


def _check_connect(sock: socket.socket, address: Any) -> None:
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return  # Unix sockets and other local families stay open
    found = _host_of(address)
    if found is not None and not _allowed(found[0]):
        _refuse(*found)


def _check_peer(sock: socket.socket) -> None:
    """Refuse a send on a connected socket whose peer is neither local nor allowed (a connection opened
    before the seal: no connect of it was checked). The first send per socket asks the kernel for the peer;
    an allowed one is remembered."""
    if sock in _peers_allowed or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    try:
        peer = sock.getpeername()
    except OSError:  # not connected: the send itself fails as it would
        return
    found = _host_of(peer)
    if found is not None and not _allowed(found[0]) and not _allowed_by_name(found[0]) and not _inbound(sock):
        _refuse(*found)
    with contextlib.suppress(TypeError):  # a socket that cannot be weakly referenced: checked every time
        _peers_allowed[sock] = True


def _connect(self: socket.socket, address: Any) -> None:
    _check_connect(self, address)
    _peers_allowed.pop(self, None)  # a datagram socket may connect again, elsewhere
    _original["socket.connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _check_connect(self, address)
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


def _checked_name(host: Any, port: Any) -> str | None:
    """The lower-case name of a host about to be resolved, refused when neither local nor allowed."""
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
    if not isinstance(name, str):
        return None
    name = name.lower().rstrip(".")
    if not _allowed(name):
        _refuse(name, port)
    return name


def _allow_resolved(name: str | None, addresses: Iterable[Any]) -> None:
    """The addresses an allowed name resolved to are allowed in turn."""
    if name is None or _is_local(name):
        return
    with _lock:
        for seal in _seals:
            if seal.allows(name):
                seal.addresses.update(str(address).lower() for address in addresses)


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    name = _checked_name(host, port)
    result = _original["socket.getaddrinfo"](host, port, *args, **kwargs)
    _allow_resolved(name, (info[4][0] for info in result))
    return result


def _gethostbyname(host: Any) -> str:
    name = _checked_name(host, None)
    address = str(_original["socket.gethostbyname"](host))
    _allow_resolved(name, [address])
    return address


def _gethostbyname_ex(host: Any) -> Any:
    name = _checked_name(host, None)
    result = _original["socket.gethostbyname_ex"](host)
    _allow_resolved(name, result[2])
    return result


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
    ]
    if hasattr(socket.socket, "sendmsg"):
        hooks.append((socket.socket, "sendmsg", _sendmsg))
    ssl = sys.modules.get("ssl")
    if ssl is not None:
        hooks += [(ssl.SSLSocket, name, wrapper) for name, wrapper in _SSL_HOOKS.items()]
    from stepfork.replay.network_asyncio import asyncio_hooks  # imports this module's checks

    return hooks + asyncio_hooks()


_installed: list[tuple[Any, str, Any]] = []  # (owner, attribute, original) while the hooks are in place


def _install() -> None:
    """Install every hook of :func:`_hooks` not installed yet (called with ``_lock`` held)."""
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


def seal(session: Any, allow_hosts: Iterable[str] = ()) -> Seal:
    """Seal the network for ``session`` (install the hooks if none is installed); return the handle for
    :func:`unseal`."""
    handle = Seal(session, allow_hosts)
    with _lock:
        if not _installed:
            _install()
        _seals.append(handle)
        _peers_allowed.clear()  # what is allowed changed
    return handle


_process_seal: Seal | None = None


def seal_process() -> None:
    """Seal the network for the rest of this process's life, whatever sessions come and go.

    For a process that exists only to replay frozen, sealed sessions (a ``stepfork check`` worker, forked
    from its zygote): the hooks are installed once, here, instead of being installed when each session
    starts and removed when it ends. Installing them sets attributes on ``socket.socket`` and asyncio's
    classes, which invalidates the interpreter's attribute caches for them: about 30 us of a 0.45 ms
    replay of the quickstart agent (docs/performance.md, "Run J"). Each session's own seal still adds its
    ``allow_hosts``, and a refusal is still recorded as the divergence of the session it happens in. Between
    sessions only loopback and Unix sockets stay reachable, where before the seal there was no seal at all.

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


def unseal(handle: Seal) -> None:
    """Undo :func:`seal` for one session; the hooks go when the last sealed session ends."""
    with _lock:
        with contextlib.suppress(ValueError):
            _seals.remove(handle)
        if not _seals:
            for owner, name, original in reversed(_installed):
                setattr(owner, name, original)
            _installed.clear()
        _peers_allowed.clear()


def is_sealed() -> bool:
    """True while a sealed replay session is active in this process."""
    with _lock:
        return bool(_seals)
