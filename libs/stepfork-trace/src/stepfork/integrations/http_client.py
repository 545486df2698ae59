"""The standard library's ``http.client``: ``instrument_http_client()`` (docs/integrations.md).

Installs Stepfork's capture in ``http.client.HTTPConnection``
(:mod:`stepfork.integrations._httpclient_capture`): every ``request`` + ``getresponse`` of an
``HTTPConnection``/``HTTPSConnection`` of the process is recorded and served back on replay in the shapes
of the other captures, as an ``http.client.HTTPResponse``. Requests of urllib3, requests and
``urllib.request`` are recorded by their own captures, once. Needs nothing beyond the standard library.
"""

from __future__ import annotations

from stepfork.integrations._httpclient_capture import UncapturedRequestWarning, install

__all__ = ["UncapturedRequestWarning", "instrument_http_client"]


def instrument_http_client() -> None:
    """Capture every ``http.client.HTTPConnection.request`` of this process from now on (idempotent).
    Without an active Stepfork session a request costs one ContextVar read. A request built by hand
    with ``putrequest``/``endheaders`` is not captured: :class:`UncapturedRequestWarning` names it."""
    install()
