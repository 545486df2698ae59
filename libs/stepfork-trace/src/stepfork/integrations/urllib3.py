"""requests, urllib3 and boto3 (botocore): ``instrument_urllib3()`` (docs/integrations.md; issue 30).

Installs Stepfork's capture in urllib3's connection pools (:mod:`stepfork.integrations._urllib3_capture`):
every request of the process sent through urllib3, which ``requests`` and botocore (boto3, Bedrock) send
through, is recorded and served back on replay in the shapes of the httpx capture, and the caller builds
its own objects from the response (``requests.Response``, boto3's dicts and event streams). Needs no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping

from stepfork.integrations._urllib3_capture import install

__all__ = ["instrument_urllib3"]


def instrument_urllib3(*, provider: str | None = None, hosts: Mapping[str, str] | None = None) -> None:
    """Capture every urllib3 request of this process from now on (idempotent): ``requests``, botocore
    (boto3, Bedrock) and urllib3 itself. Without an active Stepfork session a request costs one
    ContextVar read.

    Args:
        provider: the provider name of hosts no table knows (default: the host name).
        hosts: ``{HOST or HOST:PORT: provider}``, checked first (a gateway, a local server).

    Raises:
        ImportError: urllib3 is not installed.
    """
    install(provider=provider, hosts=hosts)
