"""The network seal's rules for hosts and ports (docs/replay.md, "The seal's rules"): how the seal
compares a host (:func:`normal_host`), which hosts resolving sends nothing for (:func:`is_local`,
:func:`is_own_name`), and whether an allowance lets one through (:func:`allows`).

A part of the seal's rules (:mod:`stepfork.replay._seal_rules` says how a sealed child loads them by their
paths): standard library only, runnable on Python 3.8, its sibling parts imported relatively, never through
``stepfork``.
"""

from __future__ import annotations

import ipaddress
import socket
import threading

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing in every sealed child's start-up
if TYPE_CHECKING:
    from typing import Any, TypeAlias

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})

Allowance: TypeAlias = "tuple[str, int | None]"  # a string: a sealed Python 3.8 child loads this file
"""``(host, port)``: a normalized host name or address and one port, or None for every port."""


def normal_host(host: str) -> str:
    """A host as the seal compares it: lower case, no trailing dot, no IPv6 zone or brackets; an address in
    its compressed form, an IPv4-mapped IPv6 address as the IPv4 address."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped if mapped is not None else address)


def is_address(host: str) -> bool:
    """True when ``host`` is an IPv4 or IPv6 address (with or without an IPv6 zone)."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def is_local(host: str) -> bool:
    """True for a local host name (``localhost``) or a loopback or unspecified address: resolving it sends
    nothing (the connection that follows is checked like any other)."""
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(normal_host(host))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


_own_names: frozenset[str] | None = None


def is_own_name(host: str) -> bool:
    """True for this machine's own host name (``socket.gethostname()``, with or without its domain): what
    ``socket.getfqdn()`` looks up, answered from ``/etc/hosts`` (a name the machine knows itself by)."""
    global _own_names
    if _own_names is None:
        try:
            name = normal_host(socket.gethostname())
        except OSError:
            name = ""
        _own_names = frozenset(filter(None, (name, name.split(".", 1)[0])))
    return host in _own_names


def port_of(value: Any) -> int | None:
    """A port as given to ``getaddrinfo``/``connect`` (int, digits, bytes), or None (a service name)."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def host_of(address: Any) -> tuple[str, int | None] | None:
    """``(normalized host, port)`` of an AF_INET/AF_INET6 address tuple; None for the rest."""
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], (str, bytes)):
        host = address[0].decode("ascii", "replace") if isinstance(address[0], bytes) else address[0]
        return normal_host(host), port_of(address[1])
    return None


def allows(pools: tuple[Any, ...], host: str, port: int | None) -> bool:
    """True when one of ``pools`` (sets of :data:`Allowance`) lets ``host`` on ``port`` through."""
    return any((host, None) in pool or (port is not None and (host, port) in pool) for pool in pools)


def format_host(host: str, port: Any = None) -> str:
    """``host:port`` as ``--allow-host`` takes it (an IPv6 address in brackets); ``host`` alone without a
    port (an IPv6 address then bare, as ``parse_allowed_host`` reads it)."""
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


vetted = threading.local()
"""``vetted.name``: set by the seal's own ``getaddrinfo``/``getnameinfo`` hooks while they call the C
function they already checked (with the flags the audit event does not carry), so the audit hook
(:mod:`stepfork.replay.network_audit`) does not check it again. Here, a module both import, so neither
imports the other for it."""
