"""The capture of requests a program sends with the standard library's ``http.client`` directly.

:func:`install` wraps two methods of ``http.client.HTTPConnection`` (and so of ``HTTPSConnection`` and of
every subclass that does not replace them). Under an active Stepfork session ``request`` runs the whole
exchange as one boundary call, described by :class:`~stepfork.integrations._http_calls.Naming` as every
other capture describes its requests (an ``llm`` or an ``http`` call, the same input and output), recorded
or served by :func:`stepfork.integrations._urllib_capture.exchange` as ``urllib.request``'s are, and
``getresponse`` hands over the response it got:

- Recording: ``request`` sends the request on the program's own connection (the original ``request``
  then ``getresponse``), reads the body whole and records it; ``getresponse`` returns an
  ``http.client.HTTPResponse`` of the same status, headers and body, read from memory. A failure is
  raised by ``request``: a connection error where ``http.client`` raises it, a failure while reading the
  response one call earlier than ``http.client`` would.
- Replay: the recorded output becomes that response; the connection never connects, so nothing reaches a
  socket. A recorded connection error (``ConnectionRefusedError``, ``TimeoutError``,
  ``http.client.RemoteDisconnected``...) is raised again as its class, by ``request``.

Why at ``request``: it has the whole request, and it is where a live connection error surfaces; the
session's call is one request with its response, so the response is read there too (replay answers
without a connection). vcrpy's stubs defer to ``getresponse`` instead, which moves connection errors
there. urllib3 (and so requests) and ``urllib.request`` send through ``http.client`` under their own
captures (:func:`~stepfork.integrations._http_calls.nested`), so their requests pass through here
untouched and are recorded once, by their own capture. A program building a request by hand
(``putrequest``/``putheader``/``endheaders``/``send``) under a session is not captured: a
:class:`UncapturedRequestWarning` names it at ``putrequest``, and a sealed replay refuses it.
"""

from __future__ import annotations

import builtins
import http.client
import socket
import warnings
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_calls import Naming, nested
from stepfork.integrations._urllib_capture import exchange, memory_response, where_of
from stepfork.trace import boundary

__all__ = ["UncapturedRequestWarning", "install"]

_MARK = "__stepfork_http_client__"
_ANSWER = "_stepfork_answer"
_naming = Naming(library="http.client")


class UncapturedRequestWarning(RuntimeWarning):
    """A request sent under a Stepfork session that no capture records (``http.client``'s
    ``putrequest``/``endheaders`` used by hand): it is not in the bundle, and a sealed replay refuses it."""


def install() -> None:
    """Capture every ``http.client.HTTPConnection.request`` of this process from now on (idempotent)."""
    import importlib

    # by name: called right after its import, before ``http.client`` is an attribute of ``http``
    client = importlib.import_module("http.client")
    cls = client.HTTPConnection
    if getattr(cls.request, _MARK, False):
        return
    original_request = cls.request
    original_getresponse = cls.getresponse
    original_putrequest = cls.putrequest

    def request(
        self: Any,
        method: str,
        url: str,
        body: Any = None,
        headers: Any = None,
        *,
        encode_chunked: bool = False,
    ) -> None:
        handler, orphan = boundary.resolve_handler()
        if handler is None or nested():
            original_request(self, method, url, body, headers or {}, encode_chunked=encode_chunked)
            return
        if self.__dict__.get(_ANSWER) is not None:  # http.client's rule: one request, then its response
            raise client.CannotSendRequest("Request-sent")
        content = body.encode("iso-8859-1") if isinstance(body, str) else wire.body_bytes(body)  # as sent
        sent = body if body is None or isinstance(body, bytes) else content  # a file or iterable is read once
        headers = dict(headers or {})

        def send_live() -> Any:
            original_request(self, method, url, sent, headers, encode_chunked=encode_chunked)
            return original_getresponse(self)

        verb = str(method).upper()
        self.__dict__[_ANSWER] = exchange(
            _naming,
            send_live,
            verb,
            _where(self, str(url)),
            [(_text(k), _text(v)) for k, v in headers.items()],
            content,
            boundary.handler_for_call(handler),  # a fork: its replay or its recording, for this call
            orphan,
            lambda reply: memory_response(reply, verb),
            _connection_error,
        )

    def getresponse(self: Any) -> Any:
        answer = self.__dict__.pop(_ANSWER, None)
        return original_getresponse(self) if answer is None else answer

    def putrequest(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        handler, _ = boundary.resolve_handler()
        if handler is not None and not nested():
            host = f"{self.host}:{self.port}"
            warnings.warn(
                f"{method} {url} to {host} is sent with http.client's putrequest/endheaders, which Stepfork "
                "does not capture: it is not in the bundle, and a sealed replay refuses it (use "
                "HTTPConnection.request, urllib.request or requests)",
                UncapturedRequestWarning,
                stacklevel=2,
            )
        return original_putrequest(self, method, url, *args, **kwargs)

    wrappers: tuple[tuple[str, Any, Any], ...] = (
        ("request", request, original_request),
        ("getresponse", getresponse, original_getresponse),
        ("putrequest", putrequest, original_putrequest),
    )
    for name, wrapper, original in wrappers:
        setattr(wrapper, _MARK, True)
        wrapper.__wrapped__ = original
        wrapper.__doc__ = original.__doc__
        setattr(cls, name, wrapper)
    from stepfork.integrations import _http_capture

    _http_capture.installed = True


def _text(value: Any) -> str:
    """A header name or value as text (bytes as HTTP/1.1 sends them: Latin-1, as ``http.client`` does)."""
    return value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else str(value)


def _where(connection: Any, url: str) -> tuple[str, str, int | None, str]:
    """``(scheme, host, port, path and query)`` of a request of ``connection`` to ``url`` (a path, or an
    absolute URL sent to a proxy); a tunnel's host is the request's."""
    if url.startswith(("http://", "https://")):
        return where_of(url)
    scheme = "https" if isinstance(connection, http.client.HTTPSConnection) else "http"
    tunnel = getattr(connection, "_tunnel_host", None)
    if tunnel:
        return scheme, str(tunnel), getattr(connection, "_tunnel_port", None), url or "/"
    return scheme, str(connection.host), connection.port, url or "/"


def _connection_error(error_type: str, message: str) -> BaseException | None:
    """The exception a recorded failure of ``http.client`` names, built from its message: an ``OSError``
    (``ConnectionRefusedError``, ``TimeoutError``, ``socket.gaierror``...) or an ``http.client`` exception
    (``RemoteDisconnected``...); None for another type."""
    module, _, name = error_type.rpartition(".")
    base: type[BaseException]
    if module in ("", "builtins"):
        cls, base = getattr(builtins, name, None), OSError
    elif module == "socket":
        cls, base = getattr(socket, name, None), OSError
    elif module == "http.client":
        cls, base = getattr(http.client, name, None), http.client.HTTPException
    else:
        return None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        return None
    try:
        return cls(message)
    except TypeError:
        return None
