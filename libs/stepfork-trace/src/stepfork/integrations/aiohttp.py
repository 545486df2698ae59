"""aiohttp clients: ``instrument_aiohttp()`` (docs/integrations.md; issue 30).

Adds Stepfork's capture, an aiohttp client middleware (:mod:`stepfork.integrations._aiohttp_capture`), to
one ``aiohttp.ClientSession`` or to every session the process creates from now on (the async paths of
google-genai and LiteLLM use aiohttp when it is installed): every request is recorded and served back on
replay in the shapes of the httpx capture, and the caller gets a real ``aiohttp.ClientResponse``. Needs
aiohttp 3.12 or later (client middlewares).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepfork.integrations._aiohttp_capture import CaptureMiddleware, install

__all__ = ["CaptureMiddleware", "instrument_aiohttp"]


def instrument_aiohttp(
    session: Any = None, *, provider: str | None = None, hosts: Mapping[str, str] | None = None
) -> Any:
    """Capture the requests of ``session`` (an ``aiohttp.ClientSession``), or, with no session, of every
    ``ClientSession`` created from now on in this process (idempotent). Without an active Stepfork session
    a request costs one ContextVar read.

    Args:
        session: the session to instrument in place, or None for every session created from now on.
        provider: the provider name of hosts no table knows (default: the host name).
        hosts: ``{HOST or HOST:PORT: provider}``, checked first (a gateway, a local server).

    Returns:
        ``session``.

    Raises:
        ImportError: aiohttp is not installed.
        TypeError: ``session`` is not an ``aiohttp.ClientSession``, or aiohttp is older than 3.12.
    """
    return install(session, provider=provider, hosts=hosts)
