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
- ``http`` calls (issue 29): a request that is not an LLM API call, or that comes from a thread without
  the session in its context, is described as an ``http`` call (:meth:`Capture.boundary_call`), recorded
  beside the LLM calls and served on replay by its request, in any order (:mod:`stepfork.trace.http_calls`).
- Replay: the session matches the call and serves the recorded output; the transport rebuilds the HTTP
  response from it and the SDK builds its own objects from the bytes, so every SDK surface (``parse``,
  ``stream()``, ``with_raw_response``...) replays with the SDK's own types. The wrapped transport is never
  called, except for a call the session executes (hybrid live LLMs). A recorded transport error is raised
  again as the same ``httpx``/``httpx2`` class, so the SDK converts it as it did. A body, or an SSE stream
  recorded to its end, is served already in memory; a stream the recorded consumer left early is a lazy
  stream that stops where it stopped (:mod:`stepfork.integrations._http_streams`).
- A fork (``stepfork fork``) is a replay up to its fork point and a recording from there on: each request
  goes to the part that takes it (:func:`stepfork.trace.boundary.handler_for_call`), served or recorded as
  above. A handler that is neither and serves a call without running its body gets the response rebuilt
  from what it served.
- Bundles of 0.2.0 (SDK-level ``{"endpoint", "request"}`` inputs) still replay: when the session's
  recording has such inputs, the request is described that way and the recorded SDK JSON is served as
  the equivalent HTTP response (:func:`_http_exchange.legacy_output`).

This module holds the transports (what happens to each request, in which order against the session) and
:func:`install`; what a request and a response are to the session (the boundary call, the recorded
output, the rebuilt response) is the client's :class:`~stepfork.integrations._http_boundary.Capture`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_boundary import Capture
from stepfork.integrations._http_calls import Replaying, nested, sending
from stepfork.integrations._http_streams import Exchange, snapshot, transport_error
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.instrument import LLMOutput

if TYPE_CHECKING:
    from stepfork.trace.callrecording import CallRecorder


def _replaying(
    capture: Capture,
    handler: Any,
    call: BoundaryCall,
    legacy: Any,
    request: Any,
    orphan: bool,
    *,
    is_async: bool,
) -> Replaying:
    """How ``request`` (described as ``call``) is replayed under ``handler``: the response rebuilt from the
    recording (:meth:`Capture.replayed`), a recorded transport error raised as the library's class, a
    Stepfork error raised through the SDK's error handling (:meth:`Capture.raise_through`)."""

    def serve(out: Any, routed: BoundaryCall) -> Any:
        return capture.replayed(out, routed, legacy, request, is_async=is_async)

    def rebuild(kind: str, message: str) -> BaseException | None:
        return transport_error(capture.lib, kind, message, request)

    return Replaying(
        capture,
        handler,
        call,
        lambda: capture.llm_form(request),
        orphan,
        request.headers.get,
        serve,
        rebuild,
        capture.raise_through,
    )


class CaptureTransport:
    """A synchronous transport recording/replaying the requests of the transport it wraps."""

    def __init__(self, inner: Any, capture: Capture) -> None:
        self.inner = inner
        self.capture = capture

    def handle_request(self, request: Any) -> Any:
        """Send ``request`` through the active session (module docstring); returns the response."""
        handler, orphan = boundary.resolve_handler()
        if handler is None or nested():
            return self.inner.handle_request(request)
        handler = boundary.handler_for_call(handler)  # a fork: its replay or its recording, for this call
        request.read()
        capture = self.capture
        call, legacy = capture.boundary_call(request, handler, orphan)
        if handler.is_replay:

            def send() -> Any:
                with sending():
                    return self.inner.handle_request(request)

            return _replaying(capture, handler, call, legacy, request, orphan, is_async=False).run(send)
        capture.note_sdk(handler, request.headers.get)
        if not hasattr(handler, "open_call"):  # another handler: one call, the body read whole
            fresh: list[Any] = []

            def read_whole() -> LLMOutput:
                with sending():
                    response = self.inner.handle_request(request)
                try:
                    content = response.read()
                finally:
                    response.close()
                out, built = capture.recorded(response, content)
                fresh.append(built)
                return out

            out = handler.handle(call, read_whole, orphan=orphan)
            # a handler may serve the call without running its body (BoundaryHandler): rebuild what it served
            return fresh[0] if fresh else capture.replayed(out, call, legacy, request, is_async=False)
        recorder: CallRecorder = handler  # type: ignore[assignment] # it has open_call (checked above)
        pending: list[Exchange] = []
        opened = recorder.open_call(call, lambda: snapshot(pending), orphan=orphan)
        try:
            with sending():
                response = self.inner.handle_request(request)
            form = wire.stream_form(response.headers.get("content-type"))
            if form is not None:
                return capture.streamed(handler, opened, response, pending, is_async=False, form=form)
            try:
                content = response.read()
            finally:
                response.close()
        except BaseException as exc:
            recorder.fail_call(opened, exc)
            raise
        out, fresh = capture.recorded(response, content)
        recorder.close_call(opened, out)
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
        if handler is None or nested():
            return await self.inner.handle_async_request(request)
        handler = boundary.handler_for_call(handler)  # a fork: its replay or its recording, for this call
        await request.aread()
        capture = self.capture
        call, legacy = capture.boundary_call(request, handler, orphan)
        if handler.is_replay:

            async def send() -> Any:
                with sending():
                    return await self.inner.handle_async_request(request)

            return await _replaying(capture, handler, call, legacy, request, orphan, is_async=True).arun(send)
        capture.note_sdk(handler, request.headers.get)
        if not hasattr(handler, "open_call"):  # another handler: one call, the body read whole
            fresh: list[Any] = []

            async def read_whole() -> LLMOutput:
                with sending():
                    response = await self.inner.handle_async_request(request)
                try:
                    content = await response.aread()
                finally:
                    await response.aclose()
                out, built = capture.recorded(response, content)
                fresh.append(built)
                return out

            out = await handler.ahandle(call, read_whole, orphan=orphan)
            # a handler may serve the call without running its body (BoundaryHandler): rebuild what it served
            return fresh[0] if fresh else capture.replayed(out, call, legacy, request, is_async=True)
        recorder: CallRecorder = handler  # type: ignore[assignment] # it has open_call (checked above)
        pending: list[Exchange] = []
        opened = recorder.open_call(call, lambda: snapshot(pending), orphan=orphan)
        try:
            with sending():
                response = await self.inner.handle_async_request(request)
            form = wire.stream_form(response.headers.get("content-type"))
            if form is not None:
                return capture.streamed(handler, opened, response, pending, is_async=True, form=form)
            try:
                content = await response.aread()
            finally:
                await response.aclose()
        except BaseException as exc:
            recorder.fail_call(opened, exc)
            raise
        out, fresh = capture.recorded(response, content)
        recorder.close_call(opened, out)
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


installed = False
"""True once this process installed the capture in a client (``stepfork.replay.requests.capture_missing``
reads it: a replay refused at the seal in a process that never installed it lacks the capture)."""


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
    named = {k.lower(): v for k, v in (hosts or {}).items()}
    capture = Capture(provider, named, sdk, lib.__name__, lib=lib, sdk_error=sdk_error)
    kind = AsyncCaptureTransport if is_async else CaptureTransport

    def wrap(transport: Any) -> Any:
        if transport is None or isinstance(transport, (CaptureTransport, AsyncCaptureTransport)):
            return transport
        return kind(transport, capture)

    client._transport = wrap(client._transport)
    client._mounts = {pattern: wrap(transport) for pattern, transport in client._mounts.items()}
    global installed
    installed = True
    return client
