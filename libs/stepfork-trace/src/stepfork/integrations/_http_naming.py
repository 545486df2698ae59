"""How the HTTP capture names an LLM request: provider, model and SDK (docs/integrations.md; issue 30).

Every capture (httpx, urllib3, aiohttp) describes a request with these functions, so a call is named the
same whichever HTTP library the SDK chose:

- **provider** (:func:`provider_for`), first match wins: the client's ``hosts`` (``HOST:PORT`` then
  ``HOST``), the process's table (:func:`name_providers`, ``stepfork record --provider HOST=NAME``), the
  known hosts (:data:`PROVIDER_HOSTS`, :data:`PROVIDER_HOST_SUFFIXES`, :data:`PROVIDER_HOST_PATTERNS`), the
  API only one provider serves, read from the path (:data:`PROVIDER_PATHS`: Gemini's
  ``/v1beta/models/M:generateContent``, Vertex AI's ``.../publishers/google/models/M:...``, Bedrock's
  ``/model/ID/converse``), the integration's default (``openai`` for ``instrument_openai``), else the host.
- **model** (:func:`model_of`): the JSON body's ``model``, else the model the path names (Gemini, Vertex
  AI, Bedrock), else None.
- **SDK** (:func:`sdk_from_headers`): ``(distribution, version)`` from the headers every SDK sends:
  ``OpenAI/Python 3.57.0`` (the Stainless SDKs: openai, anthropic, groq...; ``AsyncOpenAI`` is openai),
  ``google-genai-sdk/3.6.1`` (``x-goog-api-client``, ``User-Agent``), ``Boto3/1.43.0``, Fern's
  ``X-Fern-SDK-Name``/``X-Fern-SDK-Version`` (cohere), Speakeasy's ``speakeasy-sdk/python 1.9.1 ...
  mistralai``.

Pure data, no HTTP library import.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from urllib.parse import unquote

PROVIDER_HOSTS: dict[str, str] = {
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "google",
    "aiplatform.googleapis.com": "vertex_ai",
    "api.mistral.ai": "mistral",
    "api.groq.com": "groq",
    "api.together.xyz": "together",
    "api.deepseek.com": "deepseek",
    "api.x.ai": "xai",
    "openrouter.ai": "openrouter",
    "api.cohere.com": "cohere",
    "api.cohere.ai": "cohere",
    "api.fireworks.ai": "fireworks",
}
"""Host -> provider name of the LLM boundary. Override per client with ``hosts={...}`` or ``provider=``,
per process with :func:`name_providers` (``stepfork record --provider HOST=NAME``)."""

PROVIDER_HOST_SUFFIXES: tuple[tuple[str, str], ...] = (
    (".openai.azure.com", "azure_openai"),
    ("-aiplatform.googleapis.com", "vertex_ai"),
)
"""Host suffix -> provider (Azure OpenAI resources are ``<name>.openai.azure.com``; Vertex AI's regional
endpoints ``<region>-aiplatform.googleapis.com``)."""

PROVIDER_HOST_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^bedrock-runtime(?:-fips)?\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?$"), "bedrock"),
)
"""Host pattern -> provider (Bedrock's runtime endpoints, ``bedrock-runtime.<region>.amazonaws.com``)."""

_GEMINI_PATH = re.compile(r"^/(?:v1|v1beta|v1alpha)/(?:models|tunedModels)/([^/:]+):([A-Za-z]+)$")
_VERTEX_PATH = re.compile(r"/publishers/[^/]+/models/([^/:]+):([A-Za-z]+)$")
_BEDROCK_PATH = re.compile(r"^/model/([^/]+)/(converse|converse-stream|invoke|invoke-with-response-stream)$")

PROVIDER_PATHS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_GEMINI_PATH, "google"),
    (_VERTEX_PATH, "vertex_ai"),
    (_BEDROCK_PATH, "bedrock"),
)
"""Path (without its query) -> provider, for the APIs only one provider serves: a Gemini, Vertex AI or
Bedrock request to a host the tables do not know (a local server, a private endpoint) is still theirs."""

_process_hosts: dict[str, str] = {}
_process_lock = threading.Lock()


def name_providers(hosts: Mapping[str, str]) -> None:
    """Name the provider of requests to other hosts for every capture of this process (a gateway, a local
    server): ``{"HOST" or "HOST:PORT": NAME}``, added to what earlier calls named (``stepfork record
    --provider HOST=NAME`` calls it in the recorded program; replay must name them the same, since the
    provider is matched). A client's own ``hosts=`` come first.

    Raises:
        ValueError: a host or a name is empty.
    """
    cleaned: dict[str, str] = {}
    for host, name in hosts.items():
        key, value = str(host).strip().lower().rstrip("."), str(name).strip()
        if not key or not value:
            raise ValueError(f"a provider needs a host and a name, got {host!r}={name!r}")
        cleaned[key] = value
    with _process_lock:
        _process_hosts.update(cleaned)


def named_providers() -> dict[str, str]:
    """A copy of the process's table (:func:`name_providers`)."""
    with _process_lock:
        return dict(_process_hosts)


def parse_provider(text: str) -> tuple[str, str]:
    """``(host, name)`` of one ``--provider HOST=NAME`` (``HOST`` may be ``HOST:PORT``, lower-cased).

    Raises:
        ValueError: not ``HOST=NAME``, or an empty host or name; the message names the entry and the form.
    """
    host, sep, name = str(text).partition("=")
    host, name = host.strip().lower().rstrip("."), name.strip()
    if not sep or not host or not name or "/" in host:
        raise ValueError(f"invalid provider {text!r}: expected HOST=NAME, for example 127.0.0.1:8000=vllm")
    return host, name


def provider_for(
    host: str,
    hosts: Mapping[str, str] | None = None,
    default: str | None = None,
    *,
    port: int | None = None,
    path: str = "",
) -> str:
    """The provider of a request to ``host`` (``port``, ``path`` without its query): see the module
    docstring for the order."""
    host = host.lower()
    keyed = f"{host}:{port}" if port is not None else None
    for table in (hosts, _process_hosts):
        if table:
            if keyed is not None and keyed in table:
                return table[keyed]
            if host in table:
                return table[host]
    known = PROVIDER_HOSTS.get(host)
    if known is not None:
        return known
    for suffix, provider in PROVIDER_HOST_SUFFIXES:
        if host.endswith(suffix):
            return provider
    for pattern, provider in PROVIDER_HOST_PATTERNS:
        if pattern.match(host):
            return provider
    if path:
        for pattern, provider in PROVIDER_PATHS:
            if pattern.search(path):
                return provider
    return default or host


def model_of(body: object, path: str = "") -> str | None:
    """The model of a request: the JSON body's ``model`` (or a multipart form's ``model`` field), else the
    model its path names (Gemini and Vertex AI ``.../models/M:verb``, Bedrock ``/model/ID/converse``,
    percent-decoded), else None."""
    model = body.get("model") if isinstance(body, dict) else None
    if model is None and isinstance(body, dict) and isinstance(body.get("multipart"), list):
        model = next((p.get("text") for p in body["multipart"] if p.get("name") == "model"), None)
    if isinstance(model, str) and model:
        return model
    if path:
        for pattern in (_GEMINI_PATH, _VERTEX_PATH, _BEDROCK_PATH):
            found = pattern.search(path)
            if found is not None:
                return unquote(found[1])
    return None


_STAINLESS = re.compile(r"([A-Za-z][\w.-]*)/Python (\S+)")
_GOOGLE = re.compile(r"(?:^|\s)google-genai-sdk/(\S+)")
_BOTO3 = re.compile(r"(?:^|\s)Boto3/(\S+)")
_BOTOCORE = re.compile(r"(?:^|\s)Botocore/(\S+)")
_SPEAKEASY = re.compile(r"^speakeasy-sdk/python (\S+) \S+ \S+ (\S+)")
_STAINLESS_NAMES = {"azureopenai": "openai", "anthropicbedrock": "anthropic", "anthropicvertex": "anthropic"}


def sdk_from_headers(header: Callable[[str], str | None]) -> tuple[str, str] | None:
    """``(distribution, version)`` of the SDK that sent a request, from its headers (``header(name)``
    returns a header's value or None; names lower-case), or None when no known SDK names itself (module
    docstring)."""
    agent = header("user-agent") or ""
    found = _STAINLESS.match(agent)
    if found is not None:
        name = found[1].lower()
        name = name.removeprefix("async") or name
        return _STAINLESS_NAMES.get(name, name), found[2]
    google = _GOOGLE.search(header("x-goog-api-client") or "") or _GOOGLE.search(agent)
    if google is not None:  # "3.6.1+afc+chat": the SDK marks the feature in use after a "+"
        return "google-genai", google[1].split("+", 1)[0]
    boto = _BOTO3.search(agent)
    if boto is not None:
        return "boto3", boto[1]
    core = _BOTOCORE.search(agent)
    if core is not None:
        return "botocore", core[1]
    fern_name, fern_version = header("x-fern-sdk-name"), header("x-fern-sdk-version")
    if fern_name and fern_version:
        return fern_name.lower(), fern_version
    speakeasy = _SPEAKEASY.match(agent)
    if speakeasy is not None:
        return speakeasy[2].lower(), speakeasy[1]
    return None
