"""Responses as plain values, for the captures of HTTP libraries other than httpx (issue 30).

The urllib3 and aiohttp captures record and serve responses through these functions, so their bundles hold
what the httpx capture's hold (:mod:`stepfork.integrations._http_exchange` describes the output):

- :func:`recorded_output`: a response read whole (status, headers, decoded body bytes) as the call's output;
- :func:`reply_of`: a recorded output as a :class:`Reply` (status, headers, body bytes, and what to raise
  once the body is consumed when the recorded stream did not finish), from which each capture builds its
  library's response object;
- :func:`fresh_headers`: the headers of a response handed over with its body already decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_boundary import without_retry_wait
from stepfork.integrations._http_json import decode_body, encode_body
from stepfork.integrations._http_streams import stream_bytes, stream_end_error, stream_of
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.instrument import LLMOutput

_DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass(frozen=True)
class Reply:
    """A recorded response to serve.

    Attributes:
        status: the HTTP status.
        headers: ``[(name, value)]`` (lower-case names, as recorded; ``content-length`` added for a body
            read whole).
        body: the decoded body bytes (a stream's events encoded back: SSE text or event-stream messages).
        after: the exception to raise once ``body`` is consumed, for a stream the recorded consumer closed
            early or that failed (:func:`stream_end_error`), else None.
    """

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    after: BaseException | None = None


def recorded_output(status: int, headers: Iterable[tuple[str, str]], content: bytes) -> LLMOutput:
    """The output of a response read whole: ``{"status", "headers", "json" | "text" | "base64"}`` and its
    token usage. ``content`` is the decoded body."""
    items = list(headers)
    content_type = next((value for name, value in items if name.lower() == "content-type"), None)
    body = decode_body(content, content_type) or {}
    out = {"status": status, "headers": wire.response_headers(items), **body}
    return LLMOutput(out, **wire.body_usage(body.get("json")))


def fresh_headers(headers: Iterable[tuple[str, str]], length: int | None) -> list[tuple[str, str]]:
    """``headers`` of a response whose body is handed over decoded: without ``Content-Encoding``,
    ``Content-Length`` and ``Transfer-Encoding``, plus ``content-length: length`` when given."""
    kept = [(name, value) for name, value in headers if name.lower() not in _DROPPED]
    if length is not None:
        kept.append(("content-length", str(length)))
    return kept


def reply_of(
    output: Any,
    call: BoundaryCall,
    legacy: dict[str, Any] | None,
    rebuild: Callable[[str, str], BaseException | None],
) -> Reply:
    """The :class:`Reply` of a recorded output (``legacy``: the 0.2.0 input it was matched with, whose
    SDK-level output is served as the equivalent HTTP response). ``rebuild(error_type, message)`` makes a
    recorded transport error the HTTP library's own exception (None: ``RecordedDependencyError``).

    Raises:
        ReplayMismatchError: ``sdk_rebuild_failed`` when the output is not an HTTP response.
    """
    output = wire.recorded_response(output, call, legacy)
    status = int(output["status"])
    headers = [(str(k), str(v)) for k, v in (output.get("headers") or {}).items()]
    form, stream = stream_of(output)
    if stream is not None:
        events = list(stream.get("events") or [])
        after = stream_end_error(stream, call, len(events), rebuild)
        return Reply(status, headers, stream_bytes(form, events), after)
    body = encode_body(output)
    if status >= 400:
        headers = without_retry_wait(headers)
    return Reply(status, fresh_headers(headers, len(body)), body)
