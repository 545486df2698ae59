"""The network seal of replay (issue 11; docs/replay.md "The network is sealed").

While a ``ReplaySession`` with ``network="sealed"`` is active (the default in ``frozen``, ``forbidden`` and
``manual`` modes), no connection leaves the process: an outbound connection to anything but loopback
(``127.0.0.0/8``, ``::1``, ``localhost``), the unspecified address or a Unix socket raises
:class:`~stepfork.replay.errors.ReplayPolicyError` (code ``network_sealed``) *before* a byte is sent,
naming the host and port and how to instrument the call. The error is also recorded as the session's
divergence, so the CLI reports it and exit codes follow the spec even when the agent swallows it.

Hooks (what Python gives; installed while at least one sealed session is active, removed after):

- ``socket.getaddrinfo``: a name that is neither local nor allowed is refused before it is resolved (a
  DNS query is network traffic too); the addresses of an allowed name are allowed in turn;
- ``socket.socket.connect`` / ``connect_ex``: every TCP/UDP connection, blocking or not. asyncio's
  ``loop.sock_connect``/``create_connection`` and every HTTP library end there.

``allow_hosts`` lists host names or IP addresses that stay reachable (a database on another host, a
service the test really needs). ``network="open"`` (the default in ``live`` and ``hybrid``, whose LLM
calls need it) installs nothing.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
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


def _is_local(host: str) -> bool:
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
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


def _connect(self: socket.socket, address: Any) -> None:
    _check_connect(self, address)
    _original["connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _check_connect(self, address)
    return int(_original["connect_ex"](self, address))


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
    if isinstance(name, str):
        name = name.lower().rstrip(".")
        if not _allowed(name):
            _refuse(name, port)
    result = _original["getaddrinfo"](host, port, *args, **kwargs)
    if isinstance(name, str) and not _is_local(name):
        with _lock:
            for seal in _seals:
                if seal.allows(name):
                    seal.addresses.update(str(info[4][0]).lower() for info in result)
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
                getaddrinfo=socket.getaddrinfo,
            )
            socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
            socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]
            socket.getaddrinfo = _getaddrinfo
        _seals.append(handle)
    return handle


def unseal(handle: Seal) -> None:
    """Undo :func:`seal` for one session; the hooks go when the last sealed session ends."""
    with _lock:
        with contextlib.suppress(ValueError):
            _seals.remove(handle)
        if not _seals and _original:
            socket.socket.connect = _original.pop("connect")  # type: ignore[method-assign]
            socket.socket.connect_ex = _original.pop("connect_ex")  # type: ignore[method-assign]
            socket.getaddrinfo = _original.pop("getaddrinfo")


def is_sealed() -> bool:
    """True while a sealed replay session is active in this process."""
    with _lock:
        return bool(_seals)
