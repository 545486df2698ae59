"""The standard library's ``urllib.request``: ``instrument_urllib()`` (docs/integrations.md; NEWCOMER3
finding 13).

Installs Stepfork's capture in ``urllib.request``'s HTTP and HTTPS handlers
(:mod:`stepfork.integrations._urllib_capture`): every ``urlopen`` of the process (and of any opener built
with ``build_opener``) is recorded and served back on replay in the shapes of the httpx capture, as an
``http.client.HTTPResponse``. Needs nothing beyond the standard library.
"""

from __future__ import annotations

from stepfork.integrations._urllib_capture import install

__all__ = ["instrument_urllib"]


def instrument_urllib() -> None:
    """Capture every ``urllib.request`` request of this process from now on (idempotent). Without an
    active Stepfork session a request costs one ContextVar read. Programs that call ``http.client``
    directly are captured by :func:`stepfork.integrations.http_client.instrument_http_client`."""
    install()
