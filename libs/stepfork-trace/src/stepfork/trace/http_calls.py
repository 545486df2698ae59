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
