"""What an exchange is, whatever recorded it: an ``http`` call that is an LLM API call (NEWCOMER2 finding 12).

The HTTP capture records an LLM API request from the agent's own context as an ``llm_request``; the same
request from a thread that does not carry the session's context (a ``ThreadPoolExecutor`` worker, a
``threading.Thread``) is recorded as an ``http`` call (:mod:`stepfork.trace.http_calls`). It is the same
exchange with the provider: two recordings differ in its response's ``system_fingerprint``, ids,
``created`` and headers as they do in an ``llm_request``'s. So the comparison reads an ``http`` call whose
request is an LLM API call *by the capture's own rule* (:func:`stepfork.integrations._http_exchange.
is_llm_request`: a POST whose JSON body names a ``model``, or whose path ends with an LLM API's path, such as
``/chat/completions``, ``/messages`` or ``:generateContent``) as an LLM call: its request is compared as an
LLM request, its response by the provider rules (docs/diff.md, "Noise rules").
"""

from __future__ import annotations

from typing import Any


def is_llm_exchange(http_input: Any) -> bool:
    """True when ``http_input`` (an ``http`` call's recorded input, ``{"method", "url", "body"}``) is an
    LLM API request by the rule that decides ``llm_request`` or ``http`` while recording; False for
    anything else (another shape, a GET, a POST of another API)."""
    if not isinstance(http_input, dict):
        return False
    method, url, body = http_input.get("method"), http_input.get("url"), http_input.get("body")
    if not isinstance(method, str) or not isinstance(url, str):
        return False
    from stepfork.integrations._http_exchange import is_llm_request

    rest = url.partition("://")[2] or url
    return is_llm_request(method, "/" + rest.partition("/")[2], body)
