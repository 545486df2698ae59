"""The capture of the standard library's ``urllib.request`` requests (NEWCOMER3 finding 13).

:func:`install` wraps ``urllib.request.AbstractHTTPHandler.do_open``, the method through which
``HTTPHandler`` and ``HTTPSHandler`` send every ``http``/``https`` request of ``urllib.request.urlopen`` and
of any opener built with ``build_opener`` (a proxy's too). With no active Stepfork session a request costs
one ContextVar read. Under a session each request is described by
:class:`~stepfork.integrations._http_calls.Naming` exactly as the httpx and urllib3 captures describe
theirs (an ``llm`` or an ``http`` call, the same input and output), so a bundle recorded through
``urllib.request`` replays through httpx, requests or aiohttp and back:

- Recording: the request goes out, the body is read whole and recorded (an SSE or AWS event-stream body
  as its events, ``finished``, as the other captures record a stream), and the caller gets an
  ``http.client.HTTPResponse`` of the same status, headers (``Content-Length`` of the decoded body) and
  body, read from memory. A stream is therefore handed over once it has ended: ``urllib.request`` is
  used for requests read whole, and a caller reading an SSE body line by line still reads it all.
- Replay: the recorded output becomes that response; no connection is opened, so nothing reaches a
  socket (the network seal never sees it). A 4xx/5xx response is returned by ``do_open`` as live, so
  ``urllib.request`` raises its own ``HTTPError`` from it. A recorded transport error
  (``urllib.error.URLError``) is raised again as ``URLError`` with its recorded reason.
- A request sent while another capture sends its own (:func:`~stepfork.integrations._http_calls.nested`)
  passes through.

Why ``do_open``: it is the one place both handlers send a request through, it sees the request whole
(``Request.get_method()``, ``full_url``, headers, ``data``) after the opener's processors added their
headers, and the object it returns is what ``urlopen`` hands the caller, so replay serves from there
without a connection existing. Programs calling ``http.client`` directly are captured by
:mod:`stepfork.integrations._httpclient_capture`, which records and serves through :func:`exchange` too.
"""

from __future__ import annotations

import http
import http.client
import io
from collections.abc import Callable
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_calls import Naming, Rebuild, Replaying, nested, sending
from stepfork.integrations._http_replies import Reply, fresh_headers, recorded_output, reply_of
from stepfork.integrations._http_streams import Exchange, snapshot
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall

__all__ = ["install"]

_MARK = "__stepfork_urllib__"
_naming = Naming(library="urllib")


def install() -> None:
    """Capture every ``urllib.request`` request of this process from now on (idempotent)."""
    import importlib

    # by name: called right after its import, before ``urllib.request`` is an attribute of ``urllib``
    handler_class = importlib.import_module("urllib.request").AbstractHTTPHandler
    if getattr(handler_class.do_open, _MARK, False):
        return
    original = handler_class.do_open

    def do_open(self: Any, http_class: Any, req: Any, **http_conn_args: Any) -> Any:
        handler, orphan = boundary.resolve_handler()
        if handler is None or nested():
            return original(self, http_class, req, **http_conn_args)
        handler = boundary.handler_for_call(handler)  # a fork: its replay or its recording, for this call
        return _captured(lambda: original(self, http_class, req, **http_conn_args), req, handler, orphan)

    setattr(do_open, _MARK, True)
    do_open.__wrapped__ = original  # type: ignore[attr-defined]
    do_open.__doc__ = original.__doc__
    handler_class.do_open = do_open
    from stepfork.integrations import _http_capture

    _http_capture.installed = True


def _captured(send_live: Any, req: Any, handler: Any, orphan: bool) -> Any:
    """One request ``req`` (a ``urllib.request.Request``) under the session ``handler``."""
    method = str(req.get_method()).upper()
    url = str(req.full_url)
    content = wire.body_bytes(req.data)
    if req.data is not None and not isinstance(req.data, bytes):
        req.data = content  # a file or an iterable is read once: the bytes are sent instead
    items = [(str(k), str(v)) for k, v in req.header_items()]

    def respond(reply: Reply) -> http.client.HTTPResponse:
        return _response(reply, method, url)

    return exchange(_naming, send_live, method, where_of(url), items, content, handler, orphan, respond)


def where_of(url: str) -> tuple[str, str, int | None, str]:
    """``(scheme, host, port or None, path and query)`` of an absolute ``url``."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target = f"{target}?{parts.query}"
    return parts.scheme, parts.hostname or "", parts.port, target


def exchange(
    naming: Naming,
    send_live: Callable[[], Any],
    method: str,
    where: tuple[str, str, int | None, str],
    items: list[tuple[str, str]],
    content: bytes,
    handler: Any,
    orphan: bool,
    respond: Callable[[Reply], http.client.HTTPResponse],
    rebuild: Rebuild | None = None,
) -> http.client.HTTPResponse:
    """One request sent through ``http.client`` (``urllib.request``'s ``do_open``, or a program's own
    ``HTTPConnection``) under the session ``handler``: recorded, or served on replay, as the response
    ``respond(reply)`` builds, its body read whole (module docstring).

    Args:
        naming: how the capture names the request.
        send_live: sends the request and returns the live ``http.client.HTTPResponse``.
        method: the HTTP method (upper case).
        where: ``(scheme, host, port or None, path and query)``.
        items: the request's headers.
        content: the body's bytes.
        handler: the active session; ``orphan``: True from a thread without the session in its context.
        respond: the response handed to the program for a reply.
        rebuild: a recorded transport failure as the library's exception (default: ``URLError``).

    Raises:
        What sending raises at record (recorded as the call's failure first); on replay the recorded
        transport failure as ``rebuild`` makes it, or the session's error (``ReplayMismatchError``).
    """
    rebuild = rebuild or _urllib_error
    call, legacy = naming.describe(method, where, items, content, handler, orphan)

    def header(name: str) -> str | None:
        return next((value for key, value in items if key.lower() == name), None)

    def send() -> Any:
        with sending():
            return send_live()

    if handler.is_replay:

        def serve(out: Any, routed: BoundaryCall) -> http.client.HTTPResponse:
            return respond(reply_of(out, routed, legacy, rebuild))

        def as_llm() -> BoundaryCall:
            return naming.request_llm_form(method, where, items, content)

        return Replaying(naming, handler, call, as_llm, orphan, header, serve, rebuild).run(send)  # type: ignore[no-any-return]
    naming.note_sdk(handler, header)
    if not hasattr(handler, "open_call"):  # another handler: one call, the body read whole
        fresh: list[http.client.HTTPResponse] = []

        def read_whole() -> Any:
            response = send()
            received, data = _read_live(response)
            fresh.append(respond(Reply(response.status, fresh_headers(received, len(data)), data)))
            return recorded_output(response.status, received, data)

        out = handler.handle(call, read_whole, orphan=orphan)
        if fresh:
            return fresh[0]
        # a handler may serve the call without running its body (BoundaryHandler): rebuild what it served
        return respond(reply_of(out, call, legacy, rebuild))
    pending: list[Exchange] = []
    opened = handler.open_call(call, lambda: snapshot(pending), orphan=orphan)
    try:
        response = send()
        received, data = _read_live(response)
    except BaseException as exc:
        handler.fail_call(opened, exc)
        raise
    form = wire.stream_form(response.headers.get("content-type"))
    if form is not None:  # recorded as the other captures record a stream: its events, finished
        stream = Exchange(handler, opened, response.status, wire.response_headers(received), form=form)
        pending.append(stream)
        stream.feed(data)
        stream.finish(wire.FINISHED)
    else:
        handler.close_call(opened, recorded_output(response.status, received, data))
    return respond(Reply(response.status, fresh_headers(received, len(data)), data))


def _read_live(response: Any) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and the whole body of a live ``http.client.HTTPResponse``, the body decoded when the
    server compressed it (``gzip``, ``deflate``: urllib leaves that to the caller, the other captures
    record decoded bodies), the response closed."""
    with response:
        data = response.read()
    received = [(str(k), str(v)) for k, v in response.headers.items()]
    encoding = (response.headers.get("content-encoding") or "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        import zlib

        try:
            wbits = zlib.MAX_WBITS | 32 if encoding != "deflate" else zlib.MAX_WBITS
            data = zlib.decompress(data, wbits)
        except zlib.error:  # raw deflate, as some servers send it
            try:
                data = zlib.decompress(data, -zlib.MAX_WBITS)
            except zlib.error:
                return received, data  # not what it says: kept as sent, its header with it
    return received, data


class _Memory:
    """What ``http.client.HTTPResponse`` reads a response from: bytes in memory, as a socket's file."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def makefile(self, *args: Any, **kwargs: Any) -> io.BytesIO:
        return io.BytesIO(self._data)


def _response(reply: Reply, method: str, url: str) -> http.client.HTTPResponse:
    """The ``http.client.HTTPResponse`` ``do_open`` returns for ``reply`` (its ``url`` and ``msg`` set as
    ``do_open`` sets them)."""
    response = memory_response(reply, method)
    response.url = url
    response.msg = response.reason  # type: ignore[assignment]  # as do_open does
    return response


def memory_response(reply: Reply, method: str) -> http.client.HTTPResponse:
    """The ``http.client.HTTPResponse`` of ``reply`` to a ``method`` request, read from memory, as
    ``HTTPConnection.getresponse`` returns it; a stream's recorded end error, if any, is raised once the
    body is read."""
    try:
        reason = http.HTTPStatus(reply.status).phrase
    except ValueError:
        reason = ""
    headers = [(k, v) for k, v in reply.headers if k.lower() not in ("content-length", "transfer-encoding")]
    headers.append(("content-length", str(len(reply.body))))
    head = f"HTTP/1.1 {reply.status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    response = http.client.HTTPResponse(_Memory(head.encode("latin-1") + reply.body), method=method)  # type: ignore[arg-type]
    response.begin()
    if reply.after is not None:
        after = reply.after
        read = response.read

        def read_then_raise(amt: int | None = None) -> bytes:
            data = read(amt)
            if not data or amt is None:
                raise after
            return data

        response.read = read_then_raise  # type: ignore[method-assign]
    return response


def _urllib_error(error_type: str, message: str) -> BaseException | None:
    """``urllib.error.URLError`` for a recorded transport error of that type, its reason the recorded
    message without the ``<urlopen error ...>`` wrapping (None for another type)."""
    if error_type.rpartition(".")[2] != "URLError":
        return None
    import urllib.error

    reason = message
    if reason.startswith("<urlopen error ") and reason.endswith(">"):
        reason = reason[len("<urlopen error ") : -1]
    return urllib.error.URLError(reason)
