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

import contextlib
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_json import decode_body, encode_body
from stepfork.integrations._http_sse import encode_events
from stepfork.integrations._http_streams import Exchange, stream_classes, through_class, transport_error
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.http_calls import http_call_name
from stepfork.trace.instrument import LLMOutput

SDK_VERSIONS = "sdk-versions"
_SDK_USER_AGENT = re.compile(r"([A-Za-z][\w.-]*)/Python (\S+)")
_DROPPED_RESPONSE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass(frozen=True)
class Capture:
    """How the transports of one client describe their requests.

    Attributes:
        lib: the client's HTTP library module (``httpx`` or ``httpx2``).
        provider: the provider of hosts the table does not know (None: the host name).
        hosts: ``{host: provider}`` checked before :data:`_http_exchange.PROVIDER_HOSTS`.
        sdk: ``(distribution, version)`` noted in the bundle's ``sdk-versions.json``, or None.
        sdk_error: the SDK's base exception class (``openai.OpenAIError``), or None: a replay error raised
            in the transport is re-raised as an instance of both its class and this one, because the SDKs
            pass their own errors through untouched but wrap (and retry) any other exception as a
            connection error, which would hide the divergence from the agent's caller.
    """

    lib: ModuleType
    provider: str | None = None
    hosts: Mapping[str, str] = field(default_factory=dict)
    sdk: tuple[str, str] | None = None
    sdk_error: type[BaseException] | None = None

    def boundary_call(
        self, request: Any, handler: Any, orphan: bool = False
    ) -> tuple[BoundaryCall, dict[str, Any] | None]:
        """The boundary call of ``request`` (its body already read) and, for a 0.2.0 recording being
        replayed, the legacy input it was matched with (else None).

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
        legacy_replay = _replays_legacy(handler)
        if not legacy_replay and (orphan or not wire.is_llm_request(data["method"], bare, data["body"])):
            return self._http_call(request, data), None
        legacy = wire.legacy_input(path, data["body"]) if legacy_replay else None
        return self._llm_call(data, bare, url.host, legacy), legacy

    def _llm_call(
        self, data: dict[str, Any], bare: str, host: str, legacy: dict[str, Any] | None
    ) -> BoundaryCall:
        model = wire.model_of(data["body"])
        name = model or f"{data['method']} {bare}"
        return BoundaryCall(
            kind="llm",
            name=name,
            model=model or name,
            provider=wire.provider_for(host, self.hosts, self.provider),
            input=legacy if legacy is not None else data,
            return_type=None,
            function=f"{self.sdk[0] if self.sdk else self.lib.__name__}:{data['method']} {bare}",
            reads_output=True,  # replayed() only reads the output to build the response's bytes
        )

    def _http_call(self, request: Any, data: dict[str, Any]) -> BoundaryCall:
        url = request.url
        netloc = url.netloc.decode("ascii", errors="replace")  # host[:port], never credentials
        raw = url.raw_path.decode("ascii", errors="replace")  # path and query, as sent
        whole = f"{url.scheme}://{netloc}{raw}"
        method = data["method"]
        return BoundaryCall(
            kind="tool",
            name=http_call_name(method, whole),
            input=wire.http_input(method, whole, data["body"]),
            return_type=None,
            function=f"{self.sdk[0] if self.sdk else self.lib.__name__}:{method} {url.path}",
            reads_output=True,
        )

    def llm_form(self, request: Any) -> BoundaryCall:
        """``request`` as an ``llm`` call in the agent's order, whatever it is: how a recording made before
        ``http`` calls existed (issue 29) holds it (``ReplaySession.route_request``)."""
        url = request.url
        query = url.query
        path = f"{url.path}?{query.decode('ascii', errors='replace')}" if query else url.path
        kept, content_type = wire.answer_headers(request.headers.raw, request.headers.encoding)
        data = wire.body_input(request.method, path, kept, request.content, content_type)
        return self._llm_call(data, url.path, url.host, None)

    def sdk_of(self, request: Any) -> tuple[str, str] | None:
        """``(distribution, version)`` of the SDK sending ``request``: the one the capture was given, else
        the one its ``User-Agent`` names (``OpenAI/Python 3.57.0``, the form of the Stainless-built SDKs:
        openai, anthropic, groq...), as for a client instrumented by zero-code recording."""
        if self.sdk is not None:
            return self.sdk
        match = _SDK_USER_AGENT.match(request.headers.get("user-agent", ""))
        return (match[1].lower(), match[2]) if match else None

    def note_sdk(self, handler: Any, request: Any) -> None:
        """Add the SDK version to the recording's ``sdk-versions.json`` (once per session)."""
        add = getattr(handler, "add_metadata", None)
        if add is None:
            return
        sdk = self.sdk_of(request)
        if sdk is None:
            return
        known = getattr(handler, "metadata", {}).get(SDK_VERSIONS)
        if not (isinstance(known, dict) and sdk[0] in known):
            add(SDK_VERSIONS, {sdk[0]: sdk[1]}, merge=True)

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
        self, recorder: Any, opened: Any, response: Any, pending: list[Exchange], *, is_async: bool
    ) -> Any:
        """Wrap an SSE response's stream so its events are recorded as they pass; return the response.
        The :class:`Exchange` is appended to ``pending`` (what the session snapshots if it ends first)."""
        headers = wire.response_headers(response.headers.multi_items())
        if hasattr(response, "_content"):  # already read (a response built from bytes), and decoded
            exchange = Exchange(recorder, opened, response.status_code, headers)
            pending.append(exchange)
            exchange.feed(response._content)
            exchange.finish(wire.FINISHED)
            return response
        # The wrapped stream sees the raw bytes (``iter_raw``): a compressed body is decoded for the
        # recording by a decoder of its own. The recorded headers never keep ``Content-Encoding``
        # (RESPONSE_HEADERS), so replay serves the decoded events as an uncompressed body, which httpx
        # reads as the same lines the live run read after decoding.
        decoder = _content_decoder(self.lib, response.headers)
        exchange = Exchange(recorder, opened, response.status_code, headers, decoder)
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
        if legacy is not None:
            output = wire.legacy_output(legacy, output)
        if not (isinstance(output, dict) and isinstance(output.get("status"), int)):
            from stepfork.replay.errors import ReplayMismatchError

            raise ReplayMismatchError(
                f"{call.label}: the recorded output is not an HTTP response (recorded by another "
                "integration?); re-record the run",
                code="sdk_rebuild_failed",
            )
        headers = output.get("headers") or {}
        sse = output.get("sse")
        if isinstance(sse, dict):
            if sse.get("end") == wire.FINISHED:
                # Nothing follows the last event: the whole body is in memory, so it is served as a read
                # body (what the fake transports and ``Response(content=...)`` give), sparing the SDK
                # httpx's raw-stream pipeline (chunker, decoder, request context) for bytes already here.
                events = encode_events(sse.get("events") or [])
                kept = list(headers.items())
                return _whole_response(self.lib, output["status"], kept, events, request, length=False)
            _, _, replay_sync, replay_async = stream_classes(self.lib)
            stream = (replay_async if is_async else replay_sync)(sse, call, self.lib, request)
            return self.lib.Response(output["status"], headers=headers, stream=stream, request=request)
        body = encode_body(output)
        served = list(headers.items())
        if output["status"] >= 400:
            served = _without_retry_wait(served)
        return _whole_response(self.lib, output["status"], served, body, request)

    def hint_sdk_change(self, exc: BaseException, handler: Any, request: Any) -> None:
        """Add to an ``input_diverged`` divergence the hint that the recording was made with another
        version of this SDK (the bundle's ``sdk-versions.json``): an upgrade can change the request the
        SDK builds from the same code, which the divergence's path alone does not say."""
        diagnostic = getattr(exc, "diagnostic", None)
        if diagnostic is None or getattr(exc, "code", None) != "input_diverged":
            return
        sdk = self.sdk_of(request)
        if sdk is None:
            return
        read = getattr(handler, "metadata", None)  # ReplaySession.metadata(name)
        recorded = read(SDK_VERSIONS) if callable(read) else None
        name, version = sdk
        then = recorded.get(name) if isinstance(recorded, dict) else None
        if not isinstance(then, str) or then == version:
            return
        import dataclasses

        hint = (
            f"the run was recorded with {name} {then}; this replay runs {name} {version}, whose requests may "
            "differ for the same code: if the SDK upgrade is the change, record the run again"
        )
        if diagnostic.hint:
            hint = f"{diagnostic.hint}; {hint}"
        exc.diagnostic = dataclasses.replace(diagnostic, hint=hint)  # type: ignore[attr-defined]

    def raise_recorded(self, exc: BaseException, request: Any) -> None:
        """Raise a recorded transport failure as the library's own exception class, when it is one."""
        error_type = getattr(exc, "error_type", None)
        if isinstance(error_type, str):
            again = transport_error(self.lib, error_type, str(getattr(exc, "message", "")), request)
            if again is not None:
                raise again from exc

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


def _without_retry_wait(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
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


_legacy_sessions: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _replays_legacy(handler: Any) -> bool:
    """True when ``handler`` replays a recording of 0.2.0's SDK-level integrations."""
    if not getattr(handler, "is_replay", False):
        return False
    try:
        return _legacy_sessions[handler]
    except (KeyError, TypeError):
        pass
    calls = getattr(handler, "calls", ()) or ()
    legacy = any(
        c.kind == "llm"
        and isinstance(c.input, dict)
        and set(c.input) == {"endpoint", "request"}
        and c.input.get("endpoint") in wire.LEGACY_ENDPOINTS.values()
        for c in calls
    )
    with contextlib.suppress(TypeError):  # a handler that cannot be weakly referenced: not cached
        _legacy_sessions[handler] = legacy
    return legacy
