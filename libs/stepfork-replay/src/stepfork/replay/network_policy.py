"""A sealed session's settings as the user gives them (docs/replay.md, "The network is sealed"): the
network policy of each mode (:func:`network_for`) and the two allow-lists, ``allow_hosts``
(``--allow-host``: :func:`parse_allowed_host`) and ``allow_commands`` (``--allow-command``:
:func:`parse_allowed_command`). Pure parsing, no state; re-exported by :mod:`stepfork.replay.network`, the
import path callers use.
"""

from __future__ import annotations

from stepfork.replay._seal_hosts import Allowance, normal_host

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
