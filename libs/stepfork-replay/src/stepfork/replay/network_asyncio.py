"""The network seal's hooks on asyncio's transports (issue 11; docs/replay.md "The network is sealed").

A connection opened *before* a sealed session (an ``httpx.AsyncClient``'s keep-alive pool, streams from
``asyncio.open_connection``) is checked at its first send (:func:`stepfork.replay.network._check_peer`).
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
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from stepfork.replay.network import _check_connect, _check_peer, _original

Check = Callable[..., None]
"""Called with the transport method's own arguments (the transport first); raises to refuse."""


def _transport_socket(transport: Any) -> Any:
    """The socket under an asyncio transport (TLS ones too), or None (a pipe). asyncio hands out a
    ``TransportSocket`` wrapper; the socket itself (its private ``_sock``) shares the per-socket verdict
    with the socket hooks, the wrapper (checked every time: it cannot be weakly referenced) otherwise."""
    wrapper = transport.get_extra_info("socket")
    return None if wrapper is None else getattr(wrapper, "_sock", wrapper)


def _check_write(transport: Any, *args: Any, **kwargs: Any) -> None:
    sock = _transport_socket(transport)
    if sock is not None:
        _check_peer(sock)


def _check_sendto(transport: Any, data: Any = None, addr: Any = None) -> None:
    # to addr when given, else to the peer the endpoint was created with
    sock = _transport_socket(transport)
    if sock is None:
        return
    if addr is not None:
        _check_connect(sock, addr)
    else:
        _check_peer(sock)


def _hooked(key: str, check: Check) -> Callable[..., Any]:
    """A transport method that runs ``check`` on its arguments, then the original stored under ``key``."""

    def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
        check(self, *args, **kwargs)
        return _original[key](self, *args, **kwargs)

    hook.__name__ = key.rsplit(".", 1)[-1]
    hook.__qualname__ = f"sealed {key}"
    return hook


async def _sock_sendfile(self: Any, sock: Any, *args: Any, **kwargs: Any) -> Any:
    _check_peer(sock)
    return await _original["BaseEventLoop.sock_sendfile"](self, sock, *args, **kwargs)


async def _sendfile(self: Any, transport: Any, *args: Any, **kwargs: Any) -> Any:
    _check_write(transport)
    return await _original["BaseEventLoop.sendfile"](self, transport, *args, **kwargs)


async def _start_tls(self: Any, transport: Any, *args: Any, **kwargs: Any) -> Any:
    # the TLS handshake writes its ClientHello from a callback of the loop: refused there, the error only
    # reached the loop's exception handler and start_tls waited for the handshake timeout (60 s)
    _check_write(transport)
    return await _original["BaseEventLoop.start_tls"](self, transport, *args, **kwargs)


_TRANSPORTS: tuple[tuple[str, str, str, Check], ...] = (
    # (module, class, method, check): the selector transports (Linux, macOS), the TLS transport over
    # either, and the proactor ones (Windows)
    ("asyncio.selector_events", "_SelectorSocketTransport", "write", _check_write),
    ("asyncio.selector_events", "_SelectorSocketTransport", "writelines", _check_write),  # 3.12+: sendmsg
    ("asyncio.selector_events", "_SelectorDatagramTransport", "sendto", _check_sendto),
    ("asyncio.sslproto", "_SSLProtocolTransport", "write", _check_write),
    ("asyncio.sslproto", "_SSLProtocolTransport", "writelines", _check_write),
    ("asyncio.proactor_events", "_ProactorBaseWritePipeTransport", "write", _check_write),
    ("asyncio.proactor_events", "_ProactorDatagramTransport", "sendto", _check_sendto),
)


def asyncio_hooks() -> list[tuple[Any, str, Any]]:
    """``(owner, attribute, wrapper)`` of the asyncio hooks, for the modules this process has loaded (a
    module loaded later has no connection opened before the seal; its new ones connect under it)."""
    hooks: list[tuple[Any, str, Any]] = []
    for module_name, class_name, method, check in _TRANSPORTS:
        owner = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(owner, type) and callable(vars(owner).get(method)):
            hooks.append((owner, method, _hooked(f"{class_name}.{method}", check)))
    base_events = sys.modules.get("asyncio.base_events")
    loop_class = getattr(base_events, "BaseEventLoop", None)
    if isinstance(loop_class, type):
        loop_methods = (("sock_sendfile", _sock_sendfile), ("sendfile", _sendfile), ("start_tls", _start_tls))
        for method, wrapper in loop_methods:
            if callable(vars(loop_class).get(method)):
                hooks.append((loop_class, method, wrapper))
    return hooks
