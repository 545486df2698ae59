"""``http`` calls: HTTP requests outside the agent's order, as schema 0.1 holds them (issue 29).

The HTTP capture (:mod:`stepfork.integrations._http_capture`) records an LLM API request as an
``llm_request``, matched by replay's cursor in the agent's order. Any other request it sees is an ``http``
call: a request from a thread that is not the agent's (no session in its context: a library's background
fetch, telemetry, a pool's retry) and a request that is not an LLM API call (a GET of a JSON file, a health
check; the rule is :func:`stepfork.integrations._http_exchange.is_llm_request`). Schema 0.1 has no event
type for it, so it is written as a ``tool_call``/``tool_result`` pair that every schema 0.1 reader reads:

- ``name``: ``http METHOD URL``, the URL without its query (``http GET
  https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json``);
- ``input``: ``{"method": "GET", "url": <the whole URL, query included>, "body": <as an LLM call's>}``,
  what replay matches (method, URL and body; never headers, which carry credentials, dates and ids);
- ``output``: the HTTP response exactly as an LLM call's (``{"status", "headers", "json" | "text" |
  "base64" | "sse"}``), or the transport error as a failed ``tool_result``.

Replay serves an ``http`` call when its request comes, in any order, from the recording's requests with
the same method, URL and body (repeated identical requests in recorded order); one the recording does not
hold is refused (docs/format.md "http calls", docs/replay.md). Nothing here imports anything heavy.

A *telemetry export* (:func:`is_telemetry`: the OpenAI Agents SDK's trace export, an OpenTelemetry OTLP/HTTP
export) is an ``http`` call too, but its body is a run's span ids, clock times and batching, different in
every run, and its answer goes to the exporter, never to the agent: a sealed replay answers it ``204 No
Content`` without sending it or matching it (issue 30). A connection to a known telemetry collector that
no instrumented client made (:func:`is_telemetry_host`) is refused by the seal without being a divergence.
"""

from __future__ import annotations

PREFIX = "http "
"""How an ``http`` call's tool name starts."""


def http_call_name(method: str, url: str) -> str:
    """The tool name of an ``http`` call: ``http METHOD URL`` (``url`` without its query string)."""
    return f"{PREFIX}{method.upper()} {url.split('?', 1)[0]}"


def is_http_call(name: object) -> bool:
    """True when ``name`` (a ``tool_call``'s name, a call label) names an ``http`` call:
    ``http METHOD http(s)://...``, the method in capitals."""
    if not isinstance(name, str) or not name.startswith(PREFIX):
        return False
    parts = name.split(" ", 2)
    return (
        len(parts) == 3
        and parts[1].isalpha()
        and parts[1].isupper()
        and parts[2].startswith(("http://", "https://"))
    )


TELEMETRY_PATH_SUFFIXES: tuple[str, ...] = (
    "/traces/ingest",  # the OpenAI Agents SDK's trace export (https://api.openai.com/v1/traces/ingest)
    "/v1/traces",  # OpenTelemetry OTLP/HTTP exports (Logfire, Phoenix, Langfuse, CrewAI's telemetry...)
    "/v1/metrics",
    "/v1/logs",
)
"""Path endings of telemetry exports (:func:`is_telemetry`)."""

TELEMETRY_HOSTS: frozenset[str] = frozenset({"telemetry.crewai.com"})
"""Telemetry collectors that libraries send to on their own (CrewAI's anonymous telemetry, on by default,
over OTLP/HTTP from a ``requests`` session): :func:`is_telemetry_host`."""


def is_telemetry(method: str, url: str) -> bool:
    """True when a request is a telemetry export: a ``POST`` whose URL path (without its query) ends with
    one of :data:`TELEMETRY_PATH_SUFFIXES`, or goes to one of :data:`TELEMETRY_HOSTS`."""
    if method.upper() != "POST":
        return False
    _, _, rest = url.partition("://")
    host, _, path = rest.partition("/")
    path = "/" + path.split("?", 1)[0].rstrip("/")
    return path.endswith(TELEMETRY_PATH_SUFFIXES) or is_telemetry_host(host)


def is_telemetry_host(host: str) -> bool:
    """True when ``host`` (a name, with or without ``:port``; any letter case) is one of
    :data:`TELEMETRY_HOSTS`."""
    name = host.rsplit("@", 1)[-1].lower().rstrip(".")
    if name.count(":") == 1:
        name = name.split(":", 1)[0]
    return name in TELEMETRY_HOSTS
