"""The seal's ``socket`` hooks (part of :mod:`stepfork.replay.network`): ``connect``/``connect_ex``
(every TCP/UDP connection, a Unix socket's included), ``send``/``sendall``/``sendfile``/``sendto``/
``sendmsg`` and ``ssl.SSLSocket``'s ``send``/``sendall``/``write`` (the first send on a socket connected
before the seal checks its peer), and ``socketpair`` (the process talking to itself, never checked). The
checks :func:`_check_connect` and :func:`_check_peer` are asyncio's and the audit hook's too.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

from stepfork.replay import network_seals
from stepfork.replay._seal_hosts import host_of
from stepfork.replay._seal_unix_sockets import is_own_unix, unix_name
from stepfork.replay.errors import ReplayPolicyError
from stepfork.replay.network_refusals import _refuse
from stepfork.replay.network_seals import (
    _allowed,
    _allowed_by_name,
    _original,
    _peers_allowed,
    _plumbing,
    _plumbing_sockets,
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
    own (:func:`stepfork.replay._seal_unix_sockets.is_own_unix`) or allowed (``allow_hosts`` holds its
    path)."""
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


def _check_peer(sock: socket.socket) -> None:
    """Refuse a send on a connected socket whose peer is not allowed (a connection opened before the seal:
    no connect of it was checked). The first send per socket asks the kernel for the peer; an allowed one
    is remembered."""
    if (sock in _peers_allowed and not network_seals._ended) or sock in _plumbing_sockets:
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
