"""Any httpx-based LLM SDK or gateway: ``instrument_httpx(client)`` (docs/integrations.md; issue 11).

Installs Stepfork's capture transport (:mod:`stepfork.integrations._http_capture`) in an ``httpx`` or
``httpx2`` ``Client``/``AsyncClient``: every request it sends is an LLM boundary, recorded with the
request as input and the HTTP response (or its Server-Sent Events) as output, and served back on replay.
Needs no SDK: hand the instrumented client to the SDK (``http_client=``) or use it directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepfork.integrations._http_capture import install
from stepfork.integrations._http_exchange import PROVIDER_HOST_SUFFIXES, PROVIDER_HOSTS

__all__ = ["PROVIDER_HOSTS", "PROVIDER_HOST_SUFFIXES", "instrument_httpx"]


def instrument_httpx(
    client: Any, *, provider: str | None = None, hosts: Mapping[str, str] | None = None
) -> Any:
    """Instrument an httpx/httpx2 client in place and return it (idempotent).

    Args:
        client: an ``httpx.Client``, ``httpx.AsyncClient``, ``httpx2.Client`` or ``httpx2.AsyncClient``
            (its default transport and every mount are wrapped).
        provider: the provider name of hosts missing from the table (default: the host name).
        hosts: ``{host: provider}``, checked before :data:`PROVIDER_HOSTS` (a proxy, Azure, a gateway).

    Returns:
        ``client``.

    Raises:
        TypeError: ``client`` is not an httpx-family client.
    """
    return install(client, provider=provider, hosts=hosts)
