"""The capture transport: every request an httpx/httpx2 client sends is one LLM boundary (issue 11).

:func:`install` wraps the client's transports (the default one and every mount) in
:class:`CaptureTransport` / :class:`AsyncCaptureTransport`. With no active Stepfork session a request costs
one ContextVar read and goes to the wrapped transport untouched. Under a session, each request becomes a
``BoundaryCall(kind="llm")``: provider from the host (:func:`_http_exchange.provider_for`), model from
the JSON body, input and output as :mod:`stepfork.integrations._http_exchange` describes them.

- Recording: the request goes out; a JSON (or any non-SSE) response is read, recorded and handed back
  with the same status, headers and bytes; an SSE response is handed back at once and its events are
  recorded as they pass (:mod:`stepfork.integrations._http_streams`). A transport error (connect,
  timeout) is recorded as the call's failure and re-raised untouched.
- Replay: the session matches the call and serves the recorded output; the transport rebuilds the HTTP
  response from it and the SDK builds its own objects from the bytes, so every SDK surface (``parse``,
  ``stream()``, ``with_raw_response``...) replays with the SDK's own types. The wrapped transport is never
  called, except for a call the session executes (hybrid live LLMs). A recorded transport error is raised
  again as the same ``httpx``/``httpx2`` class, so the SDK converts it as it did. A body, or an SSE stream
  recorded to its end, is served already in memory; a stream the recorded consumer left early is a lazy
  stream that stops where it stopped (:mod:`stepfork.integrations._http_streams`).
- Bundles of 0.2.0 (SDK-level ``{"endpoint", "request"}`` inputs) still replay: when the session's
  recording has such inputs, the request is described that way and the recorded SDK JSON is served as
  the equivalent HTTP response (:func:`_http_exchange.legacy_output`).
"""

from __future__ import annotations

import contextlib
import re
import sys
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_json import decode_body, encode_body
from stepfork.integrations._http_streams import Exchange, stream_classes, through_class, transport_error
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall
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

    def boundary_call(self, request: Any, handler: Any) -> tuple[BoundaryCall, dict[str, Any] | None]:
        """The boundary call of ``request`` (its body already read) and, for a 0.2.0 recording being
        replayed, the legacy input it was matched with (else None)."""
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
        model = wire.model_of(data["body"])
        legacy = wire.legacy_input(path, data["body"]) if _replays_legacy(handler) else None
        name = model or f"{data['method']} {bare}"
        call = BoundaryCall(
            kind="llm",
            name=name,
            model=model or name,
            provider=wire.provider_for(url.host, self.hosts, self.provider),
            input=legacy if legacy is not None else data,
            return_type=None,
            function=f"{self.sdk[0] if self.sdk else self.lib.__name__}:{data['method']} {bare}",
            reads_output=True,  # replayed() only reads the output to build the response's bytes
        )
        return call, legacy

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
                events = wire.encode_events(sse.get("events") or [])
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


def _snapshot(pending: list[Exchange]) -> LLMOutput:
    """What the session records for a request still open when it ends."""
    if pending:
        return pending[0].output()
    return LLMOutput({"status": None, "headers": {}, "incomplete": "the session ended before the response"})


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


class CaptureTransport:
    """A synchronous transport recording/replaying the requests of the transport it wraps."""

    def __init__(self, inner: Any, capture: Capture) -> None:
        self.inner = inner
        self.capture = capture

    def handle_request(self, request: Any) -> Any:
        """Send ``request`` through the active session (module docstring); returns the response."""
        handler, orphan = boundary.resolve_handler()
        if handler is None:
            return self.inner.handle_request(request)
        request.read()
        capture = self.capture
        call, legacy = capture.boundary_call(request, handler)
        if handler.is_replay:
            live: list[Any] = []

            def execute() -> None:
                live.append(self.inner.handle_request(request))

            try:
                out = handler.handle(call, execute, orphan=orphan)
            except Exception as exc:
                capture.hint_sdk_change(exc, handler, request)
                capture.raise_recorded(exc, request)
                capture.raise_through(exc)
                raise
            return live[0] if live else capture.replayed(out, call, legacy, request, is_async=False)
        capture.note_sdk(handler, request)
        if not hasattr(handler, "open_call"):  # another handler: one call, the body read whole
            fresh: list[Any] = []

            def read_whole() -> LLMOutput:
                response = self.inner.handle_request(request)
                try:
                    content = response.read()
                finally:
                    response.close()
                out, built = capture.recorded(response, content)
                fresh.append(built)
                return out

            handler.handle(call, read_whole, orphan=orphan)
            return fresh[0]
        pending: list[Exchange] = []
        opened = handler.open_call(call, lambda: _snapshot(pending), orphan=orphan)
        try:
            response = self.inner.handle_request(request)
            if wire.is_sse(response.headers.get("content-type")):
                return capture.streamed(handler, opened, response, pending, is_async=False)
            try:
                content = response.read()
            finally:
                response.close()
        except BaseException as exc:
            handler.fail_call(opened, exc)
            raise
        out, fresh = capture.recorded(response, content)
        handler.close_call(opened, out)
        return fresh

    def close(self) -> None:
        """Close the wrapped transport."""
        self.inner.close()

    def __enter__(self) -> CaptureTransport:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.inner.__exit__(*exc_info)


class AsyncCaptureTransport:
    """The asynchronous :class:`CaptureTransport`."""

    def __init__(self, inner: Any, capture: Capture) -> None:
        self.inner = inner
        self.capture = capture

    async def handle_async_request(self, request: Any) -> Any:
        """Send ``request`` through the active session (module docstring); returns the response."""
        handler, orphan = boundary.resolve_handler()
        if handler is None:
            return await self.inner.handle_async_request(request)
        await request.aread()
        capture = self.capture
        call, legacy = capture.boundary_call(request, handler)
        if handler.is_replay:
            live: list[Any] = []

            async def execute() -> None:
                live.append(await self.inner.handle_async_request(request))

            try:
                out = await handler.ahandle(call, execute, orphan=orphan)
            except Exception as exc:
                capture.hint_sdk_change(exc, handler, request)
                capture.raise_recorded(exc, request)
                capture.raise_through(exc)
                raise
            return live[0] if live else capture.replayed(out, call, legacy, request, is_async=True)
        capture.note_sdk(handler, request)
        if not hasattr(handler, "open_call"):  # another handler: one call, the body read whole
            fresh: list[Any] = []

            async def read_whole() -> LLMOutput:
                response = await self.inner.handle_async_request(request)
                try:
                    content = await response.aread()
                finally:
                    await response.aclose()
                out, built = capture.recorded(response, content)
                fresh.append(built)
                return out

            await handler.ahandle(call, read_whole, orphan=orphan)
            return fresh[0]
        pending: list[Exchange] = []
        opened = handler.open_call(call, lambda: _snapshot(pending), orphan=orphan)
        try:
            response = await self.inner.handle_async_request(request)
            if wire.is_sse(response.headers.get("content-type")):
                return capture.streamed(handler, opened, response, pending, is_async=True)
            try:
                content = await response.aread()
            finally:
                await response.aclose()
        except BaseException as exc:
            handler.fail_call(opened, exc)
            raise
        out, fresh = capture.recorded(response, content)
        handler.close_call(opened, out)
        return fresh

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self.inner.aclose()

    async def __aenter__(self) -> AsyncCaptureTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.inner.__aexit__(*exc_info)


def library_of(client: Any) -> tuple[ModuleType, bool] | None:
    """``(httpx or httpx2 module, is_async)`` of an httpx-family client, or None."""
    for cls in type(client).__mro__:
        root = cls.__module__.split(".", 1)[0]
        if root in ("httpx", "httpx2") and cls.__name__ in ("Client", "AsyncClient"):
            lib = sys.modules.get(root)
            if lib is not None:
                return lib, cls.__name__ == "AsyncClient"
    return None


def install(
    client: Any,
    *,
    provider: str | None = None,
    hosts: Mapping[str, str] | None = None,
    sdk: tuple[str, str] | None = None,
    sdk_error: type[BaseException] | None = None,
) -> Any:
    """Wrap the transports of an ``httpx``/``httpx2`` client in capture transports (idempotent); the
    arguments are the :class:`Capture` fields.

    Returns ``client``. Raises TypeError when it is not an httpx-family ``Client``/``AsyncClient``.
    """
    found = library_of(client)
    if found is None:
        raise TypeError(f"expected an httpx or httpx2 Client/AsyncClient, got {type(client)!r}")
    lib, is_async = found
    capture = Capture(lib, provider, {k.lower(): v for k, v in (hosts or {}).items()}, sdk, sdk_error)
    kind = AsyncCaptureTransport if is_async else CaptureTransport

    def wrap(transport: Any) -> Any:
        if transport is None or isinstance(transport, (CaptureTransport, AsyncCaptureTransport)):
            return transport
        return kind(transport, capture)

    client._transport = wrap(client._transport)
    client._mounts = {pattern: wrap(transport) for pattern, transport in client._mounts.items()}
    return client
