"""The network seal of replay (issue 11; docs/replay.md "The network is sealed").

While a ``ReplaySession`` with ``network="sealed"`` is active (the default in ``frozen``, ``forbidden`` and
``manual`` modes), no connection leaves the process: an outbound connection to anything but loopback
(``127.0.0.0/8``, ``::1``, ``localhost``), the unspecified address or a Unix socket raises
:class:`~stepfork.replay.errors.ReplayPolicyError` (code ``network_sealed``) *before* a byte is sent,
naming the host and port and how to instrument the call. The error is also recorded as the session's
divergence, so the CLI reports it and exit codes follow the spec even when the agent swallows it.

Hooks (what Python gives; installed while at least one sealed session is active, removed after):

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
  per socket until the next connect or the next change of sealed sessions.

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
    seal = next((s for s in seals if s.session is active), seals[0])
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
    if found is not None and not _allowed(found[0]):
        _refuse(*found)
    with contextlib.suppress(TypeError):  # a socket that cannot be weakly referenced: checked every time
        _peers_allowed[sock] = True


def _connect(self: socket.socket, address: Any) -> None:
    _check_connect(self, address)
    _peers_allowed.pop(self, None)  # a datagram socket may connect again, elsewhere
    _original["connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _check_connect(self, address)
    _peers_allowed.pop(self, None)
    return int(_original["connect_ex"](self, address))


def _send(self: socket.socket, data: Any, *args: Any) -> int:
    _check_peer(self)
    return int(_original["send"](self, data, *args))


def _sendall(self: socket.socket, data: Any, *args: Any) -> None:
    _check_peer(self)
    _original["sendall"](self, data, *args)


def _ssl_send(self: Any, data: Any, *args: Any) -> int:
    _check_peer(self)
    return int(_original["ssl_send"](self, data, *args))


def _ssl_sendall(self: Any, data: Any, *args: Any) -> None:
    _check_peer(self)
    _original["ssl_sendall"](self, data, *args)


def _ssl_write(self: Any, data: Any) -> int:
    _check_peer(self)
    return int(_original["ssl_write"](self, data))


def _sendto(self: socket.socket, data: Any, *args: Any) -> int:
    # sendto(data, address) or sendto(data, flags, address)
    if args:
        _check_connect(self, args[-1])
    return int(_original["sendto"](self, data, *args))


def _sendmsg(self: socket.socket, buffers: Any, *args: Any) -> int:
    # sendmsg(buffers[, ancdata[, flags[, address]]])
    if len(args) >= 3 and args[2] is not None:
        _check_connect(self, args[2])
    else:
        _check_peer(self)
    return int(_original["sendmsg"](self, buffers, *args))


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
    result = _original["getaddrinfo"](host, port, *args, **kwargs)
    _allow_resolved(name, (info[4][0] for info in result))
    return result


def _gethostbyname(host: Any) -> str:
    name = _checked_name(host, None)
    address = str(_original["gethostbyname"](host))
    _allow_resolved(name, [address])
    return address


def _gethostbyname_ex(host: Any) -> Any:
    name = _checked_name(host, None)
    result = _original["gethostbyname_ex"](host)
    _allow_resolved(name, result[2])
    return result


def seal(session: Any, allow_hosts: Iterable[str] = ()) -> Seal:
    """Seal the network for ``session`` (install the hooks if none is installed); return the handle for
    :func:`unseal`."""
    handle = Seal(session, allow_hosts)
    with _lock:
        if not _seals:
            _original.update(
                connect=socket.socket.connect,
                connect_ex=socket.socket.connect_ex,
                sendto=socket.socket.sendto,
                sendmsg=getattr(socket.socket, "sendmsg", None),
                getaddrinfo=socket.getaddrinfo,
                gethostbyname=socket.gethostbyname,
                gethostbyname_ex=socket.gethostbyname_ex,
            )
            socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
            socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]
            socket.socket.sendto = _sendto  # type: ignore[method-assign,assignment]
            if _original["sendmsg"] is not None:  # POSIX only
                socket.socket.sendmsg = _sendmsg  # type: ignore[method-assign,assignment]
            socket.getaddrinfo = _getaddrinfo
            socket.gethostbyname = _gethostbyname
            socket.gethostbyname_ex = _gethostbyname_ex
            _original.update(send=socket.socket.send, sendall=socket.socket.sendall)
            socket.socket.send = _send  # type: ignore[method-assign,assignment]
            socket.socket.sendall = _sendall  # type: ignore[method-assign,assignment]
            # TLS sockets send from OpenSSL's code, past socket.send: checked before encryption. Only when
            # ssl is loaded: a TLS connection opened later connects under the seal, and is checked there.
            ssl = sys.modules.get("ssl")
            if ssl is not None:
                cls = ssl.SSLSocket
                _original.update(ssl_send=cls.send, ssl_sendall=cls.sendall, ssl_write=cls.write)
                cls.send, cls.sendall, cls.write = _ssl_send, _ssl_sendall, _ssl_write
        _seals.append(handle)
        _peers_allowed.clear()  # what is allowed changed
    return handle


def unseal(handle: Seal) -> None:
    """Undo :func:`seal` for one session; the hooks go when the last sealed session ends."""
    with _lock:
        with contextlib.suppress(ValueError):
            _seals.remove(handle)
        if not _seals and _original:
            socket.socket.connect = _original.pop("connect")  # type: ignore[method-assign]
            socket.socket.connect_ex = _original.pop("connect_ex")  # type: ignore[method-assign]
            socket.socket.sendto = _original.pop("sendto")  # type: ignore[method-assign]
            sendmsg = _original.pop("sendmsg")
            if sendmsg is not None:
                socket.socket.sendmsg = sendmsg  # type: ignore[method-assign]
            socket.getaddrinfo = _original.pop("getaddrinfo")
            socket.gethostbyname = _original.pop("gethostbyname")
            socket.gethostbyname_ex = _original.pop("gethostbyname_ex")
            socket.socket.send = _original.pop("send")  # type: ignore[method-assign]
            socket.socket.sendall = _original.pop("sendall")  # type: ignore[method-assign]
            if "ssl_send" in _original:
                cls = sys.modules["ssl"].SSLSocket
                cls.send, cls.sendall, cls.write = (
                    _original.pop("ssl_send"),
                    _original.pop("ssl_sendall"),
                    _original.pop("ssl_write"),
                )
        _peers_allowed.clear()


def is_sealed() -> bool:
    """True while a sealed replay session is active in this process."""
    with _lock:
        return bool(_seals)
