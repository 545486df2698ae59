"""One HTTP exchange with an LLM provider as Stepfork records it (docs/integrations.md, "HTTP capture").

Pure data, no httpx import: the capture transport (:mod:`stepfork.integrations._http_capture`) turns a
request into the boundary's *input* and a response into its *output* with these functions, and replay
turns the output back into bytes.

Input (what replay matches)::

    {"method": "POST", "path": "/v1/chat/completions", "headers": {<answer-changing headers>},
     "body": <the JSON body> | {"text": ...} | {"base64": ...} | {"multipart": [<part>...]} | null}

A ``multipart/form-data`` body (an upload: ``audio.transcriptions.create``, ``files.create``) is its parts
in order, ``{"name", "filename"?, "content_type"?, "json" | "text" | "base64"?}``, never its bytes: the
boundary is random per request, so the bytes would differ at every replay (:func:`multipart_parts`).

Only :data:`ANSWER_HEADERS` are kept: credentials (``Authorization``, ``x-api-key``...) and per-request
values never are. Output (served back on replay, never matched)::

    {"status": 200, "headers": {<RESPONSE_HEADERS>}, "json": <body>}            # or "text" / "base64"
    {"status": 200, "headers": {...}, "sse": {"end": "finished" | "consumer_closed" | "failed",
     "event_count": k, "events": [{"event"?, "data" | "text"?, "id"?, "retry"?}...], "error": null | {...}}}

    {"status": 200, "headers": {...}, "eventstream": {<the same keys>, "events": [{"headers": {":event-type":
     "contentBlockDelta", ...}, "json" | "text" | "base64": <payload>}...]}}

The events are parsed from and encoded back to SSE bytes by :mod:`stepfork.integrations._http_sse`, and to
AWS event-stream messages (``application/vnd.amazon.eventstream``, Bedrock's streams) by
:mod:`stepfork.integrations._http_eventstream`. The same shapes come from every HTTP library the capture
covers (httpx, urllib3 and so requests and botocore, aiohttp): a bundle recorded through one replays
through another. The provider, model and SDK of a request are named by
:mod:`stepfork.integrations._http_naming`, its token usage read by :mod:`stepfork.integrations._http_usage`.

Per-request values the provider generates (``x-request-id``, ``request-id``, ``openai-processing-ms``,
rate-limit counters, ``date``) are in the output headers, for the SDK to read, and never in the input.

A request that is not an LLM API call (:func:`is_llm_request`), and any request from a thread without the
session in its context, is an ``http`` call instead (:mod:`stepfork.trace.http_calls`): input
``{"method", "url", "body"}`` (:func:`http_input`), the same output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from stepfork.integrations._http_json import decode_body_exactly
from stepfork.integrations._http_naming import (
    PROVIDER_HOST_SUFFIXES,
    PROVIDER_HOSTS,
    model_of,
    provider_for,
)
from stepfork.integrations._http_usage import UsageTotals, body_usage, events_usage

if TYPE_CHECKING:
    from stepfork.trace.boundary import BoundaryCall

__all__ = [
    "recorded_response",
    "PROVIDER_HOSTS",
    "PROVIDER_HOST_SUFFIXES",
    "UsageTotals",
    "body_usage",
    "events_usage",
    "model_of",
    "provider_for",
]

ANSWER_HEADERS = frozenset(
    {
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        # Bedrock's InvokeModel options sent as headers (converse carries them in its body)
        "x-amzn-bedrock-guardrailidentifier",
        "x-amzn-bedrock-guardrailversion",
        "x-amzn-bedrock-performanceconfig-latency",
        "x-amzn-bedrock-trace",
    }
)
"""Request headers that change the model's answer, so they are part of the matched input. Never a
signature, a date or an id: boto3's ``Authorization``, ``X-Amz-Date``, ``X-Amz-Security-Token``,
``amz-sdk-invocation-id`` and ``amz-sdk-request`` differ at every request and stay out."""

RESPONSE_HEADERS = frozenset(
    {
        "content-type",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "openai-version",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "date",
    }
)
RESPONSE_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "ratelimit-", "x-amzn-")
"""Response headers kept in the output (the ones the SDKs read: botocore reads its error code from
``x-amzn-errortype``); the rest are transport details (and checksums such as ``x-amz-crc32``, which
would not hold for the re-serialized body)."""

LEGACY_ENDPOINTS = {
    "/chat/completions": "chat.completions.create",
    "/responses": "responses.create",
    "/messages": "messages.create",
}
"""Path suffix -> the SDK method 0.2.0 recorded it as (``{"endpoint", "request"}`` inputs)."""

FINISHED, CONSUMER_CLOSED, FAILED = "finished", "consumer_closed", "failed"

TERMINAL_EVENTS = frozenset({"message_stop", "response.completed", "response.failed", "response.incomplete"})
"""SSE event names after which a provider sends nothing more (with OpenAI's ``data: [DONE]``): a stream
closed right after one of them is recorded as ``finished`` (the SDKs stop reading there)."""


LLM_PATH_SUFFIXES: tuple[str, ...] = (
    # OpenAI and the APIs that copy it (Azure, vLLM, Ollama's /v1, LiteLLM proxy, OpenRouter, Groq...)
    "/chat/completions",
    "/completions",
    "/responses",
    "/embeddings",
    "/moderations",
    "/audio/transcriptions",
    "/audio/translations",
    "/audio/speech",
    "/images/generations",
    "/images/edits",
    "/images/variations",
    # Anthropic, Cohere, Ollama's own API, rerankers
    "/messages",
    "/chat",
    "/generate",
    "/embed",
    "/rerank",
    # Gemini (generativelanguage, Vertex AI) and Bedrock: the model is in the path, not the body
    ":generateContent",
    ":streamGenerateContent",
    ":embedContent",
    ":batchEmbedContents",
    ":predict",
    "/invoke",
    "/invoke-with-response-stream",
    "/converse",
    "/converse-stream",
)
"""Path endings of LLM API calls whose body need not name a ``model`` (:func:`is_llm_request`)."""


def is_llm_request(method: str, path: str, body: Any) -> bool:
    """True when a request is an LLM API call (an ``llm_request``, matched in the agent's order): a ``POST``
    whose body is a JSON object (or a multipart form) that names a ``model``, or whose path (without the
    query) ends with one of :data:`LLM_PATH_SUFFIXES`. Anything else (a ``GET``, a health check, a POST of
    another API) is an ``http`` call (docs/integrations.md, "Requests outside the agent's order")."""
    if method.upper() != "POST" or not isinstance(body, dict):
        return False
    if model_of(body) is not None:
        return True
    return path.split("?", 1)[0].rstrip("/").endswith(LLM_PATH_SUFFIXES)


def http_input(method: str, url: str, body: Any) -> dict[str, Any]:
    """The matched input of an ``http`` call: ``{"method", "url", "body"}`` (``url`` whole, query
    included; ``body`` as :func:`body_input` gives it)."""
    return {"method": method.upper(), "url": url, "body": body}


def is_terminal(event: Mapping[str, Any]) -> bool:
    """True when ``event`` ends the provider's stream (:data:`TERMINAL_EVENTS`, ``[DONE]``; Bedrock's
    ``converse_stream`` ends with its ``metadata`` event)."""
    if event.get("text") == "[DONE]" or event.get("event") in TERMINAL_EVENTS:
        return True
    headers = event.get("headers")
    return isinstance(headers, Mapping) and headers.get(":event-type") == "metadata"


def request_input(
    method: str, path: str, headers: Iterable[tuple[str, str]], content: bytes, content_type: str | None
) -> dict[str, Any]:
    """The matched input of one request (module docstring); ``path`` includes the query string."""
    kept = {k.lower(): v for k, v in headers if k.lower() in ANSWER_HEADERS}
    return body_input(method, path, kept, content, content_type)


def body_input(
    method: str, path: str, kept: dict[str, str], content: bytes, content_type: str | None
) -> dict[str, Any]:
    """:func:`request_input` with the answer-changing headers already chosen (``kept``, lower-case names)."""
    if content_type and content_type[:19].lower() == "multipart/form-data":
        parts = multipart_parts(content, content_type)
        if parts is not None:
            return {"method": method.upper(), "path": path, "headers": kept, "body": {"multipart": parts}}
    body, exact = decode_body_exactly(content, content_type)
    value = body["json"] if body is not None and "json" in body else body
    if exact:  # NaN/Infinity become the ``float`` tagged form: the input must be JSON (BoundaryCall)
        from stepfork.trace.jsonable import to_jsonable

        value = to_jsonable(value)
    return {"method": method.upper(), "path": path, "headers": kept, "body": value}


_ANSWER_HEADERS_RAW = frozenset(name.encode("ascii") for name in ANSWER_HEADERS)


def answer_headers(raw: Iterable[tuple[bytes, bytes]], encoding: str) -> tuple[dict[str, str], str | None]:
    """``(kept, content_type)`` of raw request headers (``httpx.Headers.raw``, decoded with the headers'
    ``encoding``): the :data:`ANSWER_HEADERS` by lower-case name, and the ``Content-Type`` (None when
    absent). One pass over the byte pairs: decoding every header to text, as ``multi_items()`` does,
    cost more than the rest of describing the request."""
    return answer_headers_lowered(((key, key.lower(), value) for key, value in raw), encoding)


def answer_headers_lowered(
    items: Iterable[tuple[bytes, bytes, bytes]], encoding: str
) -> tuple[dict[str, str], str | None]:
    """:func:`answer_headers` over ``(raw name, lower-case name, value)`` byte triples, the form an
    ``httpx.Headers`` keeps its items in (``Headers._list``): the names come lower-cased already, which
    spares a ``lower()`` per header of every request (about 1 us of the 1.8 us the scan took)."""
    kept: dict[str, str] = {}
    content_types: list[bytes] = []
    for _, low, value in items:
        if low in _ANSWER_HEADERS_RAW:
            kept[low.decode(encoding)] = value.decode(encoding)  # the last one wins, as in a dict
        elif low == b"content-type":
            content_types.append(value)
    # several values are joined with ", ", as Headers.get() joins them
    return kept, b", ".join(content_types).decode(encoding) if content_types else None


def legacy_input(path: str, body: Any) -> dict[str, Any] | None:
    """The ``{"endpoint", "request"}`` input 0.2.0 recorded for this request, or None (not an SDK method)."""
    bare = path.split("?", 1)[0]
    for suffix, endpoint in LEGACY_ENDPOINTS.items():
        if bare.endswith(suffix) and isinstance(body, dict):
            return {"endpoint": endpoint, "request": body}
    return None


def multipart_parts(content: bytes, content_type: str) -> list[dict[str, Any]] | None:
    """The parts of a ``multipart/form-data`` body (RFC 7578), in order, without the boundary: each
    ``{"name", "filename"?, "content_type"?}`` plus its content as :func:`decode_body` gives it
    (``json``/``text``/``base64``; nothing for an empty part). None when ``content_type`` names no
    boundary or the body does not use it (the body is then recorded as bytes)."""
    from email.message import Message

    def params(name: str, value: str) -> Message:
        header = Message()
        header[name] = value
        return header

    boundary = params("content-type", content_type).get_param("boundary")
    if not isinstance(boundary, str) or not boundary:
        return None
    delimiter = b"--" + boundary.encode("latin-1")
    chunks = content.split(delimiter)
    if len(chunks) < 2 or not chunks[-1].startswith(b"--"):
        return None
    parts: list[dict[str, Any]] = []
    for chunk in chunks[1:-1]:
        head, _, data = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        headers: dict[str, str] = {}
        for line in head.split(b"\r\n"):
            key, _, value = line.decode("utf-8", errors="replace").partition(":")
            headers[key.strip().lower()] = value.strip()
        disposition = params("content-disposition", headers.get("content-disposition", ""))
        part: dict[str, Any] = {"name": disposition.get_param("name", header="content-disposition")}
        filename = disposition.get_param("filename", header="content-disposition")
        if filename is not None:
            part["filename"] = filename
        if "content-type" in headers:
            part["content_type"] = headers["content-type"]
        body, _ = decode_body_exactly(data.removesuffix(b"\r\n"), headers.get("content-type"))
        if body is not None:
            part.update(_jsonable_body(body))
        parts.append(part)
    return parts


def _jsonable_body(body: dict[str, Any]) -> dict[str, Any]:
    """A decoded body as plain JSON (NaN/Infinity and big integers tagged, as in :func:`body_input`)."""
    from stepfork.trace.jsonable import to_jsonable

    return {key: to_jsonable(value) for key, value in body.items()}


def response_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The response headers kept in the output (lower-case names)."""
    kept: dict[str, str] = {}
    for name, value in headers:
        low = name.lower()
        if low in RESPONSE_HEADERS or low.startswith(RESPONSE_HEADER_PREFIXES):
            kept[low] = value
    return kept


def is_sse(content_type: str | None) -> bool:
    """True for a ``text/event-stream`` response."""
    return (content_type or "").split(";", 1)[0].strip().lower() == "text/event-stream"


def is_eventstream(content_type: str | None) -> bool:
    """True for an AWS event stream (``application/vnd.amazon.eventstream``: Bedrock's
    ``converse_stream``, ``invoke_model_with_response_stream``)."""
    return (content_type or "").split(";", 1)[0].strip().lower() == EVENTSTREAM_TYPE


EVENTSTREAM_TYPE = "application/vnd.amazon.eventstream"


def stream_form(content_type: str | None) -> str | None:
    """``"sse"`` or ``"eventstream"`` for a response recorded event by event as it passes, else None."""
    if is_sse(content_type):
        return "sse"
    if is_eventstream(content_type):
        return "eventstream"
    return None


def stream_output(
    form: str,
    status: int,
    headers: dict[str, str],
    events: list[dict[str, Any]],
    end: str,
    error: dict[str, str] | None,
) -> dict[str, Any]:
    """The output of a streamed response in ``form`` (``"sse"`` or ``"eventstream"``; module docstring)."""
    stream = {"end": end, "event_count": len(events), "events": events, "error": error}
    return {"status": status, "headers": headers, form: stream}


def sse_output(
    status: int, headers: dict[str, str], events: list[dict[str, Any]], end: str, error: dict[str, str] | None
) -> dict[str, Any]:
    """The output of a streamed response (module docstring)."""
    sse = {"end": end, "event_count": len(events), "events": events, "error": error}
    return {"status": status, "headers": headers, "sse": sse}


def legacy_output(input_: Mapping[str, Any], output: Any) -> dict[str, Any]:
    """The HTTP output equivalent to a 0.2.0 SDK-level output (a response's wire JSON, or
    ``{"stream": {"end", "chunks", "error"}}``) for the endpoint of ``input_``."""
    stream = output.get("stream") if isinstance(output, dict) else None
    if not (isinstance(stream, dict) and isinstance(stream.get("chunks"), list)):
        return {"status": 200, "headers": {"content-type": "application/json"}, "json": output}
    named = input_.get("endpoint") != "chat.completions.create"  # Responses/Messages events carry names
    events: list[dict[str, Any]] = []
    for chunk in stream["chunks"]:
        event: dict[str, Any] = {"data": chunk}
        if named and isinstance(chunk, dict) and isinstance(chunk.get("type"), str):
            event = {"event": chunk["type"], "data": chunk}
        events.append(event)
    end = str(stream.get("end") or CONSUMER_CLOSED)
    if end == FINISHED and not named:
        events.append({"text": "[DONE]"})
    return sse_output(200, {"content-type": "text/event-stream"}, events, end, stream.get("error"))


def recorded_response(output: Any, call: BoundaryCall, legacy: dict[str, Any] | None) -> dict[str, Any]:
    """The recorded HTTP response ``output`` of ``call`` (a dict with an int ``status``), the 0.2.0
    SDK-level output of a ``legacy`` input first turned into its equivalent HTTP response.

    Raises:
        ReplayMismatchError: ``sdk_rebuild_failed`` when the output is not an HTTP response.
    """
    if legacy is not None:
        output = legacy_output(legacy, output)
    if not (isinstance(output, dict) and isinstance(output.get("status"), int)):
        from stepfork.replay.errors import ReplayMismatchError

        raise ReplayMismatchError(
            f"{call.label}: the recorded output is not an HTTP response (recorded by another integration?); "
            "re-record the run",
            code="sdk_rebuild_failed",
        )
    return output


def body_bytes(body: Any) -> bytes:
    """The bytes of a request body as the ``urllib3`` and ``urllib.request`` clients accept it: bytes, str
    (UTF-8), a bytearray or memoryview, a file (read from where it is) or an iterable of chunks; None is
    no body. Raises what reading the file raises."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    read = getattr(body, "read", None)
    if callable(read):
        data = read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return b"".join(c.encode("utf-8") if isinstance(c, str) else bytes(c) for c in body)
