"""The capture of aiohttp's requests: a client middleware (aiohttp >= 3.12; issue 30).

:class:`CaptureMiddleware` is an aiohttp client middleware (``ClientSession(middlewares=...)``, aiohttp's
documented seam for "code that runs around every request"): aiohttp calls it with the ``ClientRequest``
built whole (URL, headers, body) before any connection is made, and takes the ``ClientResponse`` it
returns, whether it came from the connection (``handler(request)``) or not. :func:`install` adds it, last
(nearest the connection, so the session's own middlewares run as usual), to every ``ClientSession``
created from then on, or to one session. With no active Stepfork session a request costs one ContextVar
read. Under a session each request is described by :class:`~stepfork.integrations._http_calls.Naming` as
the httpx and urllib3 captures describe theirs (the same input and output shapes):

- Recording: the request goes out; a body is read whole (decoded, as ``read()`` gives it), recorded and
  handed back as a fresh ``ClientResponse`` of the same status and headers (without ``Content-Encoding``);
  an SSE or AWS event-stream body is handed back at once, its events recorded as the caller reads them
  (:class:`_Relay` pulls from the live response), ``finished``/``consumer_closed``/``failed`` as for httpx.
- Replay: the recorded output becomes a ``ClientResponse`` whose content stream holds the recorded bytes;
  no connection is made (the connector is never called, so the network seal never sees a socket). A
  stream that did not finish raises its recorded end once read; a recorded transport error is raised again
  as its ``aiohttp`` class when it can be built from its message.
- A request sent under another capture (:func:`~stepfork.integrations._http_calls.nested`: LiteLLM's httpx
  transport sending through aiohttp) passes through: the outer capture records it.
"""

from __future__ import annotations

import asyncio
import http
import inspect
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_calls import Naming, Replaying, nested, sending
from stepfork.integrations._http_replies import Reply, fresh_headers, recorded_output, reply_of
from stepfork.integrations._http_streams import Exchange, snapshot
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall

_MARK = "__stepfork_aiohttp__"


class CaptureMiddleware:
    """The aiohttp client middleware of the capture (module docstring), naming requests by ``naming``."""

    def __init__(self, naming: Naming) -> None:
        self.naming = naming

    async def __call__(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Send ``request`` through the active session; return the ``ClientResponse``."""
        session, orphan = boundary.resolve_handler()
        if session is None or nested():
            return await handler(request)
        session = boundary.handler_for_call(session)  # a fork: its replay or its recording, for this call
        return await _captured(self.naming, request, handler, session, orphan)


async def _captured(naming: Naming, request: Any, handler: Any, session: Any, orphan: bool) -> Any:
    content = await _body_bytes(request)
    url = request.url
    target = url.raw_path_qs or "/"
    where = (str(url.scheme), str(url.raw_host or url.host or ""), url.explicit_port, target)
    items = [(str(k), str(v)) for k, v in request.headers.items()]
    method = str(request.method).upper()
    call, legacy = naming.describe(method, where, items, content, session, orphan)

    def header(name: str) -> str | None:
        value = request.headers.get(name)
        return None if value is None else str(value)

    async def send() -> Any:
        with sending():
            return await handler(request)

    if session.is_replay:

        def serve(out: Any, routed: BoundaryCall) -> Any:
            return _response(request, reply_of(out, routed, legacy, _aiohttp_error))

        def as_llm() -> BoundaryCall:
            return naming.request_llm_form(method, where, items, content)

        replaying = Replaying(naming, session, call, as_llm, orphan, header, serve, _aiohttp_error)
        return await replaying.arun(send)
    naming.note_sdk(session, header)
    if not hasattr(session, "open_call"):  # another handler: one call, the body read whole
        fresh: list[Any] = []

        async def read_whole() -> Any:
            response = await send()
            try:
                data = await response.read()
            finally:
                response.release()
            received = _header_items(response)
            fresh.append(_response(request, Reply(response.status, fresh_headers(received, len(data)), data)))
            return recorded_output(response.status, received, data)

        out = await session.ahandle(call, read_whole, orphan=orphan)
        if fresh:
            return fresh[0]
        # a handler may serve the call without running its body (BoundaryHandler): rebuild what it served
        return _response(request, reply_of(out, call, legacy, _aiohttp_error))
    pending: list[Exchange] = []
    opened = session.open_call(call, lambda: snapshot(pending), orphan=orphan)
    try:
        response = await send()
        received = _header_items(response)
        form = wire.stream_form(response.headers.get("content-type"))
        if form is not None:
            exchange = Exchange(session, opened, response.status, wire.response_headers(received), form=form)
            pending.append(exchange)
            served = Reply(response.status, fresh_headers(received, None), b"")
            return _response(request, served, relay=(response, exchange), reason=response.reason)
        try:
            data = await response.read()
        finally:
            response.release()
    except BaseException as exc:
        session.fail_call(opened, exc)
        raise
    session.close_call(opened, recorded_output(response.status, received, data))
    reply = Reply(response.status, fresh_headers(received, len(data)), data)
    return _response(request, reply, reason=response.reason)


async def _body_bytes(request: Any) -> bytes:
    """The bytes of ``request``'s body; a body that can be read only once (a file, an async iterator) is
    replaced by its bytes, so the live request still sends it."""
    body = request.body
    if not body:
        return b""
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    from aiohttp import payload

    content = await body.as_bytes()
    if not isinstance(body, payload.BytesPayload):
        await request.update_body(content)
    return bytes(content)


def _header_items(response: Any) -> list[tuple[str, str]]:
    return [(str(k), str(v)) for k, v in response.headers.items()]


class _Idle:
    """The protocol of a content stream no connection feeds (the :class:`StreamReader`'s flow control
    has nothing to pause)."""

    connected = True
    _reading_paused = False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


_RELAY: list[type] = []


def _relay_class() -> type:
    """``aiohttp.StreamReader`` whose ``_wait`` (where every read waits for more bytes) pulls the next
    chunk from a live response, recording it, or raises a replayed stream's recorded end (built once)."""
    if _RELAY:
        return _RELAY[0]
    from aiohttp import StreamReader

    class Relay(StreamReader):
        __slots__ = ("_after", "_exchange", "_source")

        def __init__(self, source: Any, exchange: Exchange | None, after: BaseException | None) -> None:
            super().__init__(_Idle(), 2**16, loop=asyncio.get_running_loop())  # type: ignore[arg-type]
            self._source = source
            self._exchange = exchange
            self._after = after

        async def _wait(self, func_name: str) -> None:
            source, exchange = self._source, self._exchange
            if source is None or exchange is None:
                if self._after is not None:
                    raise self._after
                self.feed_eof()
                return
            try:
                chunk = await source.content.readany()
            except BaseException as exc:
                exchange.finish(wire.FAILED, exc)
                self._source = None
                source.close()
                raise
            if chunk:
                exchange.feed(chunk)
                self.feed_data(chunk)
                return
            exchange.finish(wire.FINISHED)
            self._source = None
            source.release()
            self.feed_eof()

        def set_exception(self, exc: BaseException, exc_cause: BaseException | None = None) -> None:
            # the response released or closed before its end: the caller left the stream
            source, exchange = self._source, self._exchange
            if source is not None and exchange is not None:
                exchange.finish(wire.CONSUMER_CLOSED)
                self._source = None
                source.close()
            if exc_cause is None:
                super().set_exception(exc)
            else:
                super().set_exception(exc, exc_cause)

    _RELAY.append(Relay)
    return Relay


def _response(
    request: Any,
    reply: Reply,
    *,
    relay: tuple[Any, Exchange] | None = None,
    reason: str | None = None,
) -> Any:
    """A ``ClientResponse`` of ``request`` holding ``reply`` (or relaying a live stream, recorded as it is
    read), as aiohttp's own ``start()`` leaves one."""
    from aiohttp import ClientResponse, HttpVersion11, StreamReader
    from aiohttp.helpers import TimerNoop
    from multidict import CIMultiDict, CIMultiDictProxy

    cls = getattr(request, "response_class", None) or ClientResponse
    options: dict[str, Any] = {
        "writer": None,
        "continue100": None,
        "timer": TimerNoop(),
        "request_info": request.request_info,
        "traces": [],
        "loop": asyncio.get_running_loop(),
        "session": None,
        "stream_writer": types.SimpleNamespace(output_size=0),  # the request was sent (or never is)
    }
    accepted = _accepted(cls)
    url = getattr(request, "original_url", None) or request.url
    response = cls(request.method, url, **{k: v for k, v in options.items() if k in accepted})
    response._closed = False
    response.version = HttpVersion11
    response.status = reply.status
    response.reason = reason if reason is not None else _reason(reply.status)
    response._headers = CIMultiDictProxy(CIMultiDict(reply.headers))
    response._raw_headers = tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers)
    if relay is not None:
        content = _relay_class()(relay[0], relay[1], None)
    elif reply.after is not None:
        content = _relay_class()(None, None, reply.after)
        content.feed_data(reply.body)
    else:
        content = StreamReader(_Idle(), 2**16, loop=asyncio.get_running_loop())  # type: ignore[arg-type]
        if reply.body:
            content.feed_data(reply.body)
        content.feed_eof()
    content.on_eof(response._response_eof)
    response.content = content
    return response


_ACCEPTED: dict[type, frozenset[str]] = {}


def _accepted(cls: type) -> frozenset[str]:
    """The keyword arguments ``cls.__init__`` takes (they changed across aiohttp releases)."""
    names = _ACCEPTED.get(cls)
    if names is None:
        names = frozenset(inspect.signature(cls).parameters)
        _ACCEPTED[cls] = names
    return names


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _aiohttp_error(error_type: str, message: str) -> BaseException | None:
    """The ``aiohttp`` exception class a recorded error type names, built from its message (None when it is
    not one, or cannot be built from a message alone)."""
    if not error_type.startswith("aiohttp."):
        return None
    import aiohttp

    cls = getattr(aiohttp, error_type.rpartition(".")[2], None)
    if not (isinstance(cls, type) and issubclass(cls, aiohttp.ClientError)):
        return None
    try:
        return cls(message)
    except TypeError:
        return None


def install(
    session: Any = None, *, provider: str | None = None, hosts: Mapping[str, str] | None = None
) -> Any:
    """Add the capture middleware to ``session`` (an ``aiohttp.ClientSession``), or, when None, to every
    ``ClientSession`` created from now on in this process (idempotent; a later call's ``provider`` and
    ``hosts`` name the requests of the sessions created after it). Returns ``session``.

    Raises:
        ImportError: aiohttp is not installed.
        TypeError: ``session`` is not an ``aiohttp.ClientSession``, or aiohttp is older than 3.12 (no
            client middlewares).
    """
    import aiohttp

    naming = Naming(provider, {k.lower(): v for k, v in (hosts or {}).items()}, None, "aiohttp")
    if "middlewares" not in inspect.signature(aiohttp.ClientSession.__init__).parameters:
        raise TypeError(
            f"the aiohttp capture needs aiohttp 3.12 or later (client middlewares); got {aiohttp.__version__}"
        )
    if session is not None:
        if not isinstance(session, aiohttp.ClientSession):
            raise TypeError(f"expected an aiohttp.ClientSession, got {type(session)!r}")
        _add(session, naming)
        _mark_installed()
        return session
    cls = aiohttp.ClientSession
    current = cls.__init__
    original = getattr(current, "__wrapped__", current) if getattr(current, _MARK, False) else current

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _add(self, naming)

    setattr(__init__, _MARK, True)
    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[method-assign]
    _mark_installed()
    return None


def _add(session: Any, naming: Naming) -> None:
    middlewares = tuple(session._middlewares or ())
    if not any(isinstance(m, CaptureMiddleware) for m in middlewares):
        session._middlewares = (*middlewares, CaptureMiddleware(naming))


def _mark_installed() -> None:
    from stepfork.integrations import _http_capture

    _http_capture.installed = True
