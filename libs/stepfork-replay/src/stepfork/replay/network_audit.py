"""The network seal's backstop: a PEP 578 audit hook (docs/replay.md, "The seal's rules").

The seal's hooks (:mod:`stepfork.replay.network`) replace methods of ``socket.socket``, a Python class. Code
that reaches the C level past them was not sealed: ``_socket.socket().connect(...)``,
``socket.socket.__mro__[1].connect(sock, ...)``, ``_socket.getaddrinfo``, a reverse lookup
(``gethostbyaddr``, ``getnameinfo``: a DNS query), ``ctypes`` calling libc's ``connect``. The interpreter
raises an *audit event* inside those C functions before they act, whoever calls them, and a hook that
raises there stops the call. So, while a sealed session is active (the hook is installed with the seal's
first hooks and, audit hooks being permanent, stays; it does nothing while nothing is sealed), this hook
applies the seal's rules to:

- ``socket.connect`` (``connect``/``connect_ex``), ``socket.sendto``, ``socket.sendmsg`` with an address:
  the address (a Unix socket's path included), as the method hooks check it;
- ``socket.getaddrinfo``, ``socket.gethostbyname``: the name, as the ``getaddrinfo`` hook checks it
  (a name the hook already let through, an ``AI_PASSIVE`` one included, is not checked twice);
- ``socket.gethostbyaddr``, ``socket.getnameinfo`` (reverse lookups): refused unless the address is
  local (loopback, unspecified) or allowed; this machine's own host name (``socket.getfqdn()``) and a
  ``getnameinfo`` asked for numbers only (``NI_NUMERICHOST``) need no query and pass;
- ``ctypes.dlsym``: looking up a libc function that reaches the network by itself (``connect``,
  ``sendto``, ``sendmsg``, the resolver's ``getaddrinfo``, ``gethostbyname``, ``gethostbyaddr``,
  ``res_query``...) through ctypes is refused: a call through ctypes raises no audit event, so where it
  would go cannot be checked, and the lookup is the last place to stop it (a function looked up before the
  seal was installed is out of reach);
- ``subprocess.Popen``, ``os.system``, ``os.exec``, ``os.posix_spawn``, ``os.spawn``: a child process
  started during the replay, judged by :mod:`stepfork.replay.network_children` (sealed when it is Python
  and inherits the sealed environment; refused, ``child_process_refused``, when the seal cannot reach it,
  unless the replay's ``allow_commands`` let it run, which the report then says).

A refusal is the same ``ReplayPolicyError`` ``network_sealed``, recorded as the session's divergence. What
no audit event shows stays out of reach: a C extension's own sockets (uvloop, libpq, gRPC) and ``os.write``
on a socket's descriptor; docs/replay.md says so.
"""

from __future__ import annotations

import sys
from typing import Any

from stepfork.replay import _seal_hosts
from stepfork.replay._seal_hosts import host_of, is_address, is_local, is_own_name, normal_host

_SOCKET_EVENTS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})
_NAME_EVENTS = frozenset({"socket.getaddrinfo", "socket.gethostbyname"})
_REVERSE_EVENTS = frozenset({"socket.gethostbyaddr", "socket.getnameinfo"})
_CTYPES_EVENTS = frozenset({"ctypes.dlsym"})
_CHILD_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"})
EVENTS = _SOCKET_EVENTS | _NAME_EVENTS | _REVERSE_EVENTS | _CTYPES_EVENTS | _CHILD_EVENTS
"""The audit events the hook acts on (https://docs.python.org/3/library/audit_events.html)."""

_NETWORK_SYMBOLS = frozenset(
    {"connect", "sendto", "sendmsg", "sendmmsg"}
    | {"getaddrinfo", "gethostbyname", "gethostbyname2", "gethostbyname_r", "gethostbyname2_r"}
    | {"gethostbyaddr", "gethostbyaddr_r", "getnameinfo"}
    | {"res_query", "res_search", "res_querydomain", "res_nquery", "res_nsearch", "res_nquerydomain"}
    | {"res_send", "res_nsend"}
)
"""libc's functions that reach the network by themselves (or the resolver): looking one up through
ctypes is refused while sealed."""

vetted = _seal_hosts.vetted  # set by the seal's own hooks (stepfork.replay._seal_hosts.vetted)

_installed = False


_network: Any = None
"""The seal's module (:mod:`stepfork.replay.network`), handed over by :func:`install`: its checks are the
audit hook's, and this module imports nothing of it (no import cycle)."""


def install(seal: Any) -> None:
    """Add the audit hook to this process, once (module docstring); ``seal`` is the seal's module, whose
    checks the hook applies. It reads the seal's list of seals (the same list object for the process's
    life) and acts only while it is not empty."""
    global _installed, _network
    if _installed:
        return
    _installed = True
    _network = seal
    seals, events, dispatch = _network._seals, EVENTS, _dispatch

    def hook(event: str, args: tuple[Any, ...]) -> None:
        # runs on every audit event of the process, at interpreter shutdown too: local names only
        if event in events and seals:
            dispatch(event, args)

    sys.addaudithook(hook)


def _dispatch(event: str, args: tuple[Any, ...]) -> None:
    if event in _SOCKET_EVENTS:
        if len(args) >= 2 and args[1] is not None:
            _network._check_connect(args[0], args[1])
    elif event in _NAME_EVENTS:
        if not getattr(vetted, "name", False) and args:
            _network._checked_name(args[0], args[1] if len(args) > 1 else None)
    elif event in _REVERSE_EVENTS:
        if not getattr(vetted, "name", False) and args:
            _check_reverse(args[0])
    elif event == "ctypes.dlsym":
        _note_symbol(args)
    else:
        from stepfork.replay import network_children

        network_children.check_start(event, args)


def _check_reverse(target: Any) -> None:
    """Refuse a reverse lookup (``gethostbyaddr(address)``, ``getnameinfo(sockaddr)``) unless it needs no
    query (a local address, this machine's own name) or its address is allowed; a name given to
    ``gethostbyaddr`` is resolved first, and checked as a name."""
    if isinstance(target, tuple):
        found = host_of(target)
        if found is None:
            return
        host = found[0]
    elif isinstance(target, (str, bytes)):
        host = normal_host(target.decode("ascii", "replace") if isinstance(target, bytes) else target)
    else:
        return
    if is_local(host) or is_own_name(host):
        return
    if not is_address(host):
        _network._checked_name(host, None)
        return
    if not _network._allowed(host, None) and not _network._allowed_by_name(host, None):
        _network._refuse(host, None, what="the reverse lookup (a DNS query) of")


# -- ctypes ---------------------------------------------------------------------------------------------


def _note_symbol(args: tuple[Any, ...]) -> None:
    """``ctypes.dlsym`` (library, name): refuse looking up a libc function that reaches the network by
    itself (a connection, a datagram to an address, a DNS query) while sealed. Calls through ctypes raise
    no audit event, so the seal cannot see where such a call would go; the lookup is where it can stop."""
    if len(args) < 2:
        return
    name = args[1].decode("ascii", "replace") if isinstance(args[1], bytes) else args[1]
    if isinstance(name, str) and name in _NETWORK_SYMBOLS:
        _network._refuse_unseen(f"looking up libc's {name}() through ctypes")
