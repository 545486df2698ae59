"""The seal's name-resolution hooks (part of :mod:`stepfork.replay.network`): ``socket.getaddrinfo``,
``gethostbyname``, ``gethostbyname_ex`` and ``getnameinfo``. A name that is neither local nor allowed is
refused before it is resolved (a DNS query is network traffic too); the addresses an allowed name resolves
to are allowed in turn. :func:`_checked_name` is the audit hook's check of a resolution too.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterable, Iterator
from typing import Any

from stepfork.replay import _seal_hosts, network_seals
from stepfork.replay._seal_hosts import is_address, is_local, normal_host
from stepfork.replay._seal_hosts import port_of as _port
from stepfork.replay.network_refusals import _refuse
from stepfork.replay.network_seals import _allowed, _original, _seals


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
    with network_seals._lock:
        for seal in _seals:
            allowed, only = seal.port_of(name, number)
            if allowed:
                seal.addresses.update((normal_host(str(address)), only) for address in addresses)


@contextlib.contextmanager
def _vetted() -> Iterator[None]:
    """While the block calls a C function this module already checked, the audit hook
    (:mod:`stepfork.replay.network_audit`) does not check it again (its event lacks the flags)."""
    vetted = _seal_hosts.vetted
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
