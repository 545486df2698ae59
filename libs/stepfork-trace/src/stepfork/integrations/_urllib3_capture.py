"""The capture of urllib3's requests, and so of requests' and botocore's (boto3, Bedrock) (issue 30).

:func:`install` wraps ``urllib3.connectionpool.HTTPConnectionPool.urlopen``, the method every request of
urllib3 goes through: ``PoolManager.urlopen``, ``urllib3.request()``, ``requests``' ``HTTPAdapter.send``
and botocore's ``URLLib3Session.send`` all call it on a pool (``HTTPSConnectionPool`` and botocore's
``AWSHTTP(S)ConnectionPool`` inherit it). With no active Stepfork session a request costs one ContextVar
read. Under a session each request is described by :class:`~stepfork.integrations._http_calls.Naming`
exactly as the httpx capture describes its own (an ``llm`` or an ``http`` call; the same input and output),
so a bundle recorded through urllib3 replays through httpx or aiohttp and back:

- Recording: the request goes out (``preload_content=False``, whatever the caller asked); a body is read
  whole and decoded, recorded, and handed back as a fresh ``urllib3.HTTPResponse`` of the same status and
  headers (without ``Content-Encoding``: the bytes are decoded). An SSE or AWS event-stream body is handed
  back at once and its events recorded as the caller reads them (chunk by chunk through ``stream()``, as
  urllib3 reads a chunked body), ``finished``/``consumer_closed``/``failed`` as for httpx.
- Replay: the recorded output becomes the ``HTTPResponse`` the pool would have returned; no connection is
  taken from the pool, so nothing reaches a socket (the network seal never sees it). A recorded transport
  error is raised again as the same ``urllib3.exceptions`` class when it can be built from its message.
- A request sent while another capture sends its own (:func:`~stepfork.integrations._http_calls.nested`:
  urllib3's retries and redirects call ``urlopen`` again from inside it) passes through.

Why ``urlopen`` and not a socket or connection patch: it is urllib3's documented entry for one request, it
sees the request whole (method, URL, headers, body) before any connection is chosen, and it returns the
object every caller (requests, botocore) builds its own response from, so replay serves from there
without a connection existing (docs/architecture.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_calls import Naming, Replaying, nested, sending
from stepfork.integrations._http_replies import Reply, fresh_headers, recorded_output, reply_of
from stepfork.integrations._http_streams import Exchange, snapshot
from stepfork.integrations._urllib3_responses import Tap, response_of, streamed_response
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall

_MARK = "__stepfork_urllib3__"
_naming = Naming(library="urllib3")


def install(*, provider: str | None = None, hosts: Mapping[str, str] | None = None) -> None:
    """Capture every urllib3 request of this process from now on (idempotent; a later call's ``provider``
    and ``hosts`` replace the earlier ones: the :class:`Naming` fields).

    Raises:
        ImportError: urllib3 is not installed.
    """
    import urllib3.connectionpool

    global _naming
    _naming = Naming(provider, {k.lower(): v for k, v in (hosts or {}).items()}, None, "urllib3")
    pool_class = urllib3.connectionpool.HTTPConnectionPool
    if getattr(pool_class.urlopen, _MARK, False):
        return
    original = pool_class.urlopen
    signature = inspect.signature(original)

    def urlopen(self: Any, *args: Any, **kwargs: Any) -> Any:
        handler, orphan = boundary.resolve_handler()
        if handler is None or nested():
            return original(self, *args, **kwargs)
        handler = boundary.handler_for_call(handler)  # a fork: its replay or its recording, for this call
        return _captured(original, signature, self, args, kwargs, handler, orphan)

    setattr(urlopen, _MARK, True)
    urlopen.__wrapped__ = original  # type: ignore[attr-defined]
    urlopen.__doc__ = original.__doc__
    pool_class.urlopen = urlopen  # type: ignore[method-assign]
    from stepfork.integrations import _http_capture

    _http_capture.installed = True


def _captured(
    original: Any, signature: inspect.Signature, pool: Any, args: Any, kwargs: Any, handler: Any, orphan: bool
) -> Any:
    """One request of ``pool`` under the session ``handler`` (module docstring)."""
    arguments = signature.bind(pool, *args, **kwargs).arguments
    method = str(arguments["method"]).upper()
    url = str(arguments["url"])
    body = arguments.get("body")
    content = wire.body_bytes(body)
    if body is not None and not isinstance(body, bytes):
        arguments["body"] = content  # a file or an iterator is read once: the bytes are sent instead
    headers = arguments.get("headers") or pool.headers
    items = [(_text(k), _text(v)) for k, v in headers.items()]  # botocore's values are bytes
    where = _where(pool, url)
    naming = _naming
    call, legacy = naming.describe(method, where, items, content, handler, orphan)

    def header(name: str) -> str | None:
        return next((value for key, value in items if key.lower() == name), None)

    forwarded = {k: v for k, v in arguments.items() if k not in ("self", "response_kw")}
    extra = arguments.get("response_kw") or {}
    asked = {
        "preload": forwarded.get("preload_content", True),
        "decode": forwarded.get("decode_content", True),
    }
    retries = forwarded.get("retries")

    def send(*, preload: bool = False) -> Any:
        with sending():
            return original(pool, **{**forwarded, "preload_content": preload}, **extra)

    def rebuild(kind: str, message: str) -> BaseException | None:
        return _urllib3_error(kind, message, pool, url)

    if handler.is_replay:

        def serve(out: Any, routed: BoundaryCall) -> Any:
            return response_of(pool, reply_of(out, routed, legacy, rebuild), method, url, asked, retries)

        def as_llm() -> BoundaryCall:
            return naming.request_llm_form(method, where, items, content)

        replaying = Replaying(naming, handler, call, as_llm, orphan, header, serve, rebuild)
        return replaying.run(lambda: send(preload=asked["preload"]))
    naming.note_sdk(handler, header)
    if not hasattr(handler, "open_call"):  # another handler: one call, the body read whole
        fresh: list[Any] = []

        def read_whole() -> Any:
            response = send()
            try:
                data = response.read(decode_content=True)
            finally:
                response.release_conn()
            fresh.append(_read_response(pool, response, data, method, url, asked, retries))
            return recorded_output(response.status, _header_items(response), data)

        out = handler.handle(call, read_whole, orphan=orphan)
        if fresh:
            return fresh[0]
        # a handler may serve the call without running its body (BoundaryHandler): rebuild what it served
        reply = reply_of(out, call, legacy, rebuild)
        return response_of(pool, reply, method, url, asked, retries)
    pending: list[Exchange] = []
    opened = handler.open_call(call, lambda: snapshot(pending), orphan=orphan)
    try:
        response = send()
        received = _header_items(response)
        form = wire.stream_form(response.headers.get("content-type"))
        if form is not None:
            exchange = Exchange(handler, opened, response.status, wire.response_headers(received), form=form)
            pending.append(exchange)
            served = Reply(response.status, fresh_headers(received, None), b"")
            return streamed_response(pool, served, Tap(response, exchange), method, url, asked, retries)
        try:
            data = response.read(decode_content=True)
        finally:
            response.release_conn()
    except BaseException as exc:
        handler.fail_call(opened, exc)
        raise
    handler.close_call(opened, recorded_output(response.status, received, data))
    return _read_response(pool, response, data, method, url, asked, retries)


def _where(pool: Any, url: str) -> tuple[str, str, int | None, str]:
    """``(scheme, host, port, path and query)`` of a request of ``pool`` to ``url`` (a path, or an
    absolute URL when the pool is a proxy's)."""
    if url.startswith(("http://", "https://")):
        from urllib3.util import parse_url

        parsed = parse_url(url)
        target = parsed.path or "/"
        if parsed.query:
            target = f"{target}?{parsed.query}"
        return str(parsed.scheme), str(parsed.host), parsed.port, target
    return str(pool.scheme), str(pool.host), pool.port, url or "/"


def _text(value: Any) -> str:
    """A header name or value as text (bytes as HTTP/1.1 sends them: Latin-1)."""
    return value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else str(value)


def _header_items(response: Any) -> list[tuple[str, str]]:
    return [(_text(k), _text(v)) for k, v in response.headers.items()]


def _read_response(
    pool: Any, live: Any, data: bytes, method: str, url: str, asked: dict[str, Any], retries: Any
) -> Any:
    """The response handed to the caller for a live body read whole (``data``, decoded)."""
    reply = Reply(live.status, fresh_headers(_header_items(live), len(data)), data)
    return response_of(pool, reply, method, url, asked, retries, reason=live.reason)


def _urllib3_error(error_type: str, message: str, pool: Any, url: str) -> BaseException | None:
    """The ``urllib3.exceptions`` class a recorded error type names, built from its message (None when it
    is not one, or cannot be built)."""
    if not error_type.startswith("urllib3."):
        return None
    import urllib3.exceptions

    cls = getattr(urllib3.exceptions, error_type.rpartition(".")[2], None)
    if not (isinstance(cls, type) and issubclass(cls, urllib3.exceptions.HTTPError)):
        return None
    for args in ((message,), (pool, url, message), (pool, message)):
        try:
            return cls(*args)
        except TypeError:
            continue
    return None
