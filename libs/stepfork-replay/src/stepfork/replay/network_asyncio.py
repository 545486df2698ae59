"""The network seal's hooks on asyncio's transports (issue 11; docs/replay.md "The network is sealed").

A connection opened *before* a sealed session (an ``httpx.AsyncClient``'s keep-alive pool, streams from
``asyncio.open_connection``) is checked at its first send, by the seal's own check of a socket's peer.
asyncio's transports send from inside a ``try``/``except BaseException`` that turns any error of
``socket.send`` into "Fatal write error on socket transport" (logged), closes the transport and leaves
the agent a ``ConnectionResetError`` (``httpx.ReadError``) at its next read: the refusal would be recorded
as the divergence but the agent's own traceback would say the peer reset the connection. So the peer is
checked here, on entry to the transport's ``write``/``writelines``/``sendto`` (before asyncio's own
``try``), and :class:`~stepfork.replay.errors.ReplayPolicyError` ``network_sealed`` is raised from the
call the agent made; nothing is buffered, the transport stays open and works again after the session,
as a plain socket does.

The transports are private classes of asyncio (``asyncio.selector_events._SelectorSocketTransport``,
``asyncio.sslproto._SSLProtocolTransport``, ...), the same names on Python 3.11 to 3.13. Each is looked
up when the seal is installed and skipped where missing (a later Python, an event loop of another
library): the socket hooks of :mod:`stepfork.replay.network` still refuse the bytes there, with asyncio's
error instead of ours. Only methods the class defines itself are hooked (3.11's ``writelines`` is
``WriteTransport``'s, which calls ``write``), so restoring them leaves each class as it was.

``loop.sock_sendfile`` and ``loop.sendfile`` (``asyncio.BaseEventLoop``, public) send with
``os.sendfile`` on the descriptor, past every socket hook: they are checked on entry too. So is
``loop.start_tls`` (``StreamWriter.start_tls``, an HTTPS proxy's tunnel): its handshake writes from a loop
callback, where a refusal would leave the agent waiting for the handshake timeout.

This module only builds the hooks: the checks and the table of original methods are the seal's, handed
over by :func:`stepfork.replay.network._hooks` (:func:`asyncio_hooks`), so it imports nothing of the seal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[..., None]
"""Called with the transport method's own arguments (the transport first); raises to refuse."""
PeerCheck = Callable[[Any], None]
"""The seal's check of a connected socket's peer (raises ``ReplayPolicyError`` ``network_sealed``)."""
ConnectCheck = Callable[[Any, Any], None]
"""The seal's check of a socket and the address it sends to (raises as :data:`PeerCheck`)."""

# (module, class, method, which check): the selector transports (Linux, macOS), the TLS transport over
# either, and the proactor ones (Windows)
_TRANSPORTS: tuple[tuple[str, str, str, str], ...] = (
    ("asyncio.selector_events", "_SelectorSocketTransport", "write", "write"),
    ("asyncio.selector_events", "_SelectorSocketTransport", "writelines", "write"),  # 3.12+: sendmsg
    ("asyncio.selector_events", "_SelectorDatagramTransport", "sendto", "sendto"),
    ("asyncio.sslproto", "_SSLProtocolTransport", "write", "write"),
    ("asyncio.sslproto", "_SSLProtocolTransport", "writelines", "write"),
    ("asyncio.proactor_events", "_ProactorBaseWritePipeTransport", "write", "write"),
    ("asyncio.proactor_events", "_ProactorDatagramTransport", "sendto", "sendto"),
)


def _transport_socket(transport: Any) -> Any:
    """The socket under an asyncio transport (TLS ones too), or None (a pipe). asyncio hands out a
    ``TransportSocket`` wrapper; the socket itself (its private ``_sock``) shares the per-socket verdict
    with the socket hooks, the wrapper (checked every time: it cannot be weakly referenced) otherwise."""
    wrapper = transport.get_extra_info("socket")
    return None if wrapper is None else getattr(wrapper, "_sock", wrapper)


def asyncio_hooks(
    check_peer: PeerCheck, check_connect: ConnectCheck, original: Mapping[str, Any]
) -> list[tuple[Any, str, Any]]:
    """``(owner, attribute, wrapper)`` of the asyncio hooks, for the modules this process has loaded (a
    module loaded later has no connection opened before the seal; its new ones connect under it).

    Args:
        check_peer, check_connect: the seal's checks, called before anything is written.
        original: the seal's table of original methods, keyed ``"<class>.<method>"``; read when a hook
            runs (the seal fills it as it installs the hooks).
    """

    def check_write(transport: Any, *args: Any, **kwargs: Any) -> None:
        sock = _transport_socket(transport)
        if sock is not None:
            check_peer(sock)

    def check_sendto(transport: Any, data: Any = None, addr: Any = None) -> None:
        # to addr when given, else to the peer the endpoint was created with
        sock = _transport_socket(transport)
        if sock is None:
            return
        if addr is not None:
            check_connect(sock, addr)
        else:
            check_peer(sock)

    def hooked(key: str, check: Check) -> Callable[..., Any]:
        """A transport method that runs ``check`` on its arguments, then the original stored under ``key``."""

        def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
            check(self, *args, **kwargs)
            return original[key](self, *args, **kwargs)

        hook.__name__ = key.rsplit(".", 1)[-1]
        hook.__qualname__ = f"sealed {key}"
        return hook

    async def sock_sendfile(self: Any, sock: Any, *args: Any, **kwargs: Any) -> Any:
        check_peer(sock)
        return await original["BaseEventLoop.sock_sendfile"](self, sock, *args, **kwargs)

    async def sendfile(self: Any, transport: Any, *args: Any, **kwargs: Any) -> Any:
        check_write(transport)
        return await original["BaseEventLoop.sendfile"](self, transport, *args, **kwargs)

    async def start_tls(self: Any, transport: Any, *args: Any, **kwargs: Any) -> Any:
        # the TLS handshake writes its ClientHello from a callback of the loop: refused there, the error
        # only reached the loop's exception handler and start_tls waited for the handshake timeout (60 s)
        check_write(transport)
        return await original["BaseEventLoop.start_tls"](self, transport, *args, **kwargs)

    checks: dict[str, Check] = {"write": check_write, "sendto": check_sendto}
    hooks: list[tuple[Any, str, Any]] = []
    for module_name, class_name, method, check in _TRANSPORTS:
        owner = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(owner, type) and callable(vars(owner).get(method)):
            hooks.append((owner, method, hooked(f"{class_name}.{method}", checks[check])))
    base_events = sys.modules.get("asyncio.base_events")
    loop_class = getattr(base_events, "BaseEventLoop", None)
    if isinstance(loop_class, type):
        loop_methods = (("sock_sendfile", sock_sendfile), ("sendfile", sendfile), ("start_tls", start_tls))
        for name, wrapper in loop_methods:
            if callable(vars(loop_class).get(name)):
                hooks.append((loop_class, name, wrapper))
    return hooks
