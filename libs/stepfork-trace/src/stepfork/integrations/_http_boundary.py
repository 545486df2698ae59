"""An httpx/httpx2 request as an LLM boundary call, and its response as the call's output (issue 11).

:class:`Capture` holds how the capture transports of one client (:mod:`stepfork.integrations._http_capture`)
translate between the client library's objects and the session: a request becomes a
``BoundaryCall(kind="llm")`` (provider from the host, :func:`_http_exchange.provider_for`; model from the
JSON body; the input as :mod:`stepfork.integrations._http_exchange` describes it); a response read whole
becomes the output and a fresh response for the SDK; an SSE response is wrapped so its events are recorded
as they pass (:mod:`stepfork.integrations._http_streams`); on replay a recorded output becomes the HTTP
response again, and a replay error is re-raised so the SDK lets it through. It also notes the SDK's version
in the recording and hints at an SDK upgrade when an input diverges.

Kept apart from the transports, which only decide per request what happens (pass through, replay, record)
and call into a :class:`Capture`: what a request and a response *are* to Stepfork is one idea, the
order of calls against the session handler another.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_calls import SDK_VERSIONS, Naming, replays_legacy
from stepfork.integrations._http_json import decode_body, encode_body
from stepfork.integrations._http_streams import (
    Exchange,
    stream_bytes,
    stream_classes,
    stream_of,
    through_class,
)
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.instrument import LLMOutput

__all__ = ["SDK_VERSIONS", "Capture"]

_DROPPED_RESPONSE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass(frozen=True)
class Capture(Naming):
    """How the transports of one httpx/httpx2 client describe their requests (the :class:`Naming`
    fields, and):

    Attributes:
        lib: the client's HTTP library module (``httpx`` or ``httpx2``).
        sdk_error: the SDK's base exception class (``openai.OpenAIError``), or None: a replay error raised
            in the transport is re-raised as an instance of both its class and this one, because the SDKs
            pass their own errors through untouched but wrap (and retry) any other exception as a
            connection error, which would hide the divergence from the agent's caller.
    """

    lib: Any = None  # the httpx or httpx2 module (a default only because the Naming fields have theirs)
    sdk_error: type[BaseException] | None = None

    def boundary_call(
        self, request: Any, handler: Any, orphan: bool = False
    ) -> tuple[BoundaryCall, dict[str, Any] | None]:
        """The boundary call of ``request`` (its body already read) and, for a 0.2.0 recording being
        replayed, the legacy input it was matched with (else None): :meth:`Naming.describe`, reading the
        request's fields as httpx holds them (the scan of its header triples is the hot path).

        An LLM API call (:func:`_http_exchange.is_llm_request`) made in the agent's context is an
        ``llm`` call; any other request, and any request from a thread without the session in its context
        (``orphan``), is an ``http`` call (:mod:`stepfork.trace.http_calls`), matched by its request
        instead of in the agent's order (issue 29). A 0.2.0 recording holds every request as an LLM call,
        and is replayed so.
        """
        url = request.url
        bare = url.path
        query = url.query
        path = f"{bare}?{query.decode('ascii', errors='replace')}" if query else bare
        headers = request.headers
        items = getattr(headers, "_list", None)  # httpx's (name, lower-case name, value) triples
        if isinstance(items, list):
            kept, content_type = wire.answer_headers_lowered(items, headers.encoding)
        else:
            kept, content_type = wire.answer_headers(headers.raw, headers.encoding)
        data = wire.body_input(request.method, path, kept, request.content, content_type)
        legacy_replay = replays_legacy(handler)
        if not legacy_replay and (orphan or not wire.is_llm_request(data["method"], bare, data["body"])):
            netloc = url.netloc.decode("ascii", errors="replace")  # host[:port], never credentials
            raw = url.raw_path.decode("ascii", errors="replace")  # path and query, as sent
            whole = f"{url.scheme}://{netloc}{raw}"
            return self.http_call(data["method"], whole, data["body"], bare), None
        legacy = wire.legacy_input(path, data["body"]) if legacy_replay else None
        return self.llm_call(data, bare, url.host, url.port, legacy), legacy

    def llm_form(self, request: Any) -> BoundaryCall:
        """``request`` as an ``llm`` call in the agent's order, whatever it is: how a recording made before
        ``http`` calls existed (issue 29) holds it (``ReplaySession.route_request``)."""
        url = request.url
        query = url.query
        path = f"{url.path}?{query.decode('ascii', errors='replace')}" if query else url.path
        kept, content_type = wire.answer_headers(request.headers.raw, request.headers.encoding)
        data = wire.body_input(request.method, path, kept, request.content, content_type)
        return self.llm_call(data, url.path, url.host, url.port, None)

    # -- recording -----------------------------------------------------------------------------------

    def recorded(self, response: Any, content: bytes) -> tuple[LLMOutput, Any]:
        """The output of a read (non-SSE) response and the response handed to the SDK."""
        headers = response.headers
        body = decode_body(content, headers.get("content-type")) or {}
        out = {
            "status": response.status_code,
            "headers": wire.response_headers(headers.multi_items()),
            **body,
        }
        usage = wire.body_usage(body.get("json"))
        kept = [(k, v) for k, v in headers.multi_items() if k.lower() not in _DROPPED_RESPONSE_HEADERS]
        fresh = _whole_response(
            self.lib,
            response.status_code,
            kept,
            content,
            response.request if _has_request(response) else None,
            response.extensions,
        )
        return LLMOutput(out, **usage), fresh

    def streamed(
        self,
        recorder: Any,
        opened: Any,
        response: Any,
        pending: list[Exchange],
        *,
        is_async: bool,
        form: str = "sse",
    ) -> Any:
        """Wrap a streamed response's body (``form``: ``"sse"`` or ``"eventstream"``) so its events are
        recorded as they pass; return the response. The :class:`Exchange` is appended to ``pending`` (what
        the session snapshots if it ends first)."""
        headers = wire.response_headers(response.headers.multi_items())
        if hasattr(response, "_content"):  # already read (a response built from bytes), and decoded
            exchange = Exchange(recorder, opened, response.status_code, headers, form=form)
            pending.append(exchange)
            exchange.feed(response._content)
            exchange.finish(wire.FINISHED)
            return response
        # The wrapped stream sees the raw bytes (``iter_raw``): a compressed body is decoded for the
        # recording by a decoder of its own. The recorded headers never keep ``Content-Encoding``
        # (RESPONSE_HEADERS), so replay serves the decoded events as an uncompressed body, which httpx
        # reads as the same lines the live run read after decoding.
        decoder = _content_decoder(self.lib, response.headers)
        exchange = Exchange(recorder, opened, response.status_code, headers, decoder, form)
        pending.append(exchange)
        recording_sync, recording_async, _, _ = stream_classes(self.lib)
        cls = recording_async if is_async else recording_sync
        response.stream = cls(response.stream, exchange)
        return response

    # -- replay --------------------------------------------------------------------------------------

    def replayed(self, output: Any, call: BoundaryCall, legacy: Any, request: Any, *, is_async: bool) -> Any:
        """The HTTP response rebuilt from a recorded output.

        Raises:
            ReplayMismatchError: ``sdk_rebuild_failed`` when the output is not an HTTP response.
        """
        output = wire.recorded_response(output, call, legacy)
        headers = output.get("headers") or {}
        form, stream = stream_of(output)
        if stream is not None:
            if stream.get("end") == wire.FINISHED:
                # Nothing follows the last event: the whole body is in memory, so it is served as a read
                # body (what the fake transports and ``Response(content=...)`` give), sparing the SDK
                # httpx's raw-stream pipeline (chunker, decoder, request context) for bytes already here.
                events = stream_bytes(form, stream.get("events") or [])
                kept = list(headers.items())
                return _whole_response(self.lib, output["status"], kept, events, request, length=False)
            _, _, replay_sync, replay_async = stream_classes(self.lib)
            lazy = (replay_async if is_async else replay_sync)(stream, call, self.lib, request, form)
            return self.lib.Response(output["status"], headers=headers, stream=lazy, request=request)
        body = encode_body(output)
        served = list(headers.items())
        if output["status"] >= 400:
            served = without_retry_wait(served)
        return _whole_response(self.lib, output["status"], served, body, request)

    def raise_through(self, exc: BaseException) -> None:
        """Re-raise a Stepfork replay error so the SDK lets it through (see ``sdk_error``)."""
        if self.sdk_error is None or not type(exc).__module__.startswith("stepfork."):
            return
        if isinstance(exc, self.sdk_error):
            return
        both = through_class(type(exc), self.sdk_error)
        again = both.__new__(both)
        again.__dict__.update(exc.__dict__)
        again.args = exc.args
        raise again.with_traceback(exc.__traceback__) from exc.__cause__


RETRY_WAIT_HONOURED = 60.0
"""Seconds of ``retry-after``/``retry-after-ms`` every version of the Stainless-built SDKs (openai,
anthropic) honours; a longer wait may make an SDK give up instead of retrying."""


def without_retry_wait(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers of a replayed error response with ``retry-after-ms: 1``, so the SDK's retry (the same
    retry: the answers are recorded) does not sleep the recorded wait again. Left as recorded when they
    name a wait of more than :data:`RETRY_WAIT_HONOURED` seconds, which an SDK may refuse to retry after:
    serving 1 ms could turn the recorded give-up into a retry the recording does not have."""
    for name, value in headers:
        low = name.lower()
        if low in ("retry-after", "retry-after-ms"):
            try:
                wait = float(value) / (1000 if low == "retry-after-ms" else 1)
            except ValueError:
                continue  # an HTTP date: in the past by replay time, the SDK backs off on its own
            if not wait <= RETRY_WAIT_HONOURED:  # NaN too
                return headers
    kept = [(name, value) for name, value in headers if name.lower() != "retry-after-ms"]
    kept.append(("retry-after-ms", "1"))
    return kept


def _content_decoder(lib: ModuleType, headers: Any) -> Any:
    """A fresh content decoder of ``lib`` for a response's ``Content-Encoding`` (gzip, deflate, br...,
    what the library supports), or None when the body is not encoded. The library builds it, on a bodiless
    response of the same encoding, so the recording decodes exactly as the SDK's ``iter_bytes`` does."""
    encoding = headers.get("content-encoding")
    if not encoding or encoding.strip().lower() == "identity":
        return None
    probe = lib.Response(200, headers=[("content-encoding", encoding)])
    return probe._get_content_decoder()


def _whole_response(
    lib: ModuleType,
    status: int,
    headers: list[tuple[str, str]],
    body: bytes,
    request: Any,
    extensions: Any = None,
    *,
    length: bool = True,
) -> Any:
    """What ``lib.Response(status, headers=headers, content=body, ...)`` builds, without running ``body``
    through the library's read path (chunkers, content decoders) once more: ``body`` is already whole and
    decoded. The response keeps an unread ``ByteStream`` of the same bytes, so reading it raw works too,
    and closing it records ``elapsed`` as for a network response. ``Content-Length`` is set as
    ``content=`` sets it (the recorded headers never hold it), appended to ``headers`` (a list of the
    caller's own), unless ``length`` is False (a replayed event stream keeps its recorded headers)."""
    if length and not _has_length(headers):
        headers.append(("Content-Length", str(len(body))))
    response = lib.Response(
        status, headers=headers, stream=lib.ByteStream(body), request=request, extensions=extensions
    )
    response._content = body  # what Response.read() keeps: the SDK's read() returns it as is
    return response


def _has_length(headers: list[tuple[str, str]]) -> bool:
    """True when ``headers`` hold a ``Content-Length`` (a loop, not ``any()`` over a generator: per call)."""
    for name, _ in headers:  # noqa: SIM110 - any() over a generator costs more, once per replayed call
        if len(name) == 14 and name.lower() == "content-length":
            return True
    return False


def _has_request(response: Any) -> bool:
    try:
        response.request  # noqa: B018 - httpx raises RuntimeError when the response has no request
    except RuntimeError:
        return False
    return True
