"""Response bodies of the capture transport: recorded as they pass, served back on replay.

Recording: :class:`Exchange` holds what one response has shown so far (status, headers, the SSE events of
a streamed body) and closes the boundary call once, when the stream ends: ``finished`` (the body was read
to its end), ``consumer_closed`` (closed or dropped before; also when the session ends first), ``failed``
(the transport raised while reading, re-raised untouched). Events are recorded as their bytes arrive.

Replay: a stream recorded to its end (``finished``) is served whole, its events encoded back to SSE bytes
as a body already read (``_http_boundary.Capture.replayed``); any other stream is one lazy chunk of the
recorded events, then it raises the recorded transport error again (``failed``: the same ``httpx``/``httpx2``
exception class when it is one, so the SDK converts it as it did, else ``RecordedDependencyError``), or
raises ``ReplayMismatchError`` ``stream_exhausted`` when the agent reads past the point where the recorded
consumer stopped.

The byte-stream classes subclass the client library's ``SyncByteStream``/``AsyncByteStream`` (httpx and
httpx2 check them); :func:`stream_classes` builds them once per library.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

from stepfork.integrations._http_eventstream import EventStreamParser
from stepfork.integrations._http_eventstream import encode_events as encode_messages
from stepfork.integrations._http_exchange import (
    CONSUMER_CLOSED,
    FAILED,
    FINISHED,
    events_usage,
    is_terminal,
    stream_output,
)
from stepfork.integrations._http_sse import SSEParser, encode_events
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.instrument import LLMOutput


class Exchange:
    """One streamed response being recorded; thread-safe (a stream may end in another thread)."""

    def __init__(
        self,
        recorder: Any,
        opened: Any,
        status: int,
        headers: dict[str, str],
        decoder: Any = None,
        form: str = "sse",
    ) -> None:
        self._recorder = recorder
        self._decoder = decoder  # the library's content decoder of a compressed stream, or None
        self._opened = opened
        self._status = status
        self._headers = headers
        self._form = form  # "sse" or "eventstream" (_http_exchange.stream_form)
        self._parser: SSEParser | EventStreamParser = (
            EventStreamParser() if form == "eventstream" else SSEParser()
        )
        self._events: list[dict[str, Any]] = []
        self._end: str | None = None
        self._error: dict[str, str] | None = None
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        """Record the events completed by ``chunk`` (raw bytes off the wire: decoded first when the
        response has a ``Content-Encoding``; the SDK reads the decoded bytes, ``iter_bytes``)."""
        with self._lock:
            if self._decoder is not None:
                chunk = _joined(self._decoder.decode(chunk))
            self._events.extend(self._parser.feed(chunk))

    def output(self) -> LLMOutput:
        """The ``llm_response`` output so far (``consumer_closed`` while not ended)."""
        with self._lock:
            events = list(self._events)
            end = self._end or CONSUMER_CLOSED
            out = stream_output(self._form, self._status, self._headers, events, end, self._error)
        return LLMOutput(out, **events_usage(events))

    def finish(self, end: str, exc: BaseException | None = None) -> None:
        """Set how the stream ended (the first call wins) and record the response. A stream closed
        after the provider's terminal event (:func:`is_terminal`) is ``finished``."""
        with self._lock:
            if self._end is not None:
                return
            if self._decoder is not None and end == FINISHED:  # what the decoder still holds
                self._events.extend(self._parser.feed(_joined(self._decoder.flush())))
            if end == CONSUMER_CLOSED and self._events and is_terminal(self._events[-1]):
                end = FINISHED
            self._end = end
            if exc is not None:
                from stepfork.trace.eventlog import exception_message, qualified_type_name

                self._error = {"error_type": qualified_type_name(exc), "message": exception_message(exc)}
        self._recorder.close_call(self._opened, self.output())


def snapshot(pending: list[Exchange]) -> LLMOutput:
    """What the session records for a request still open when it ends: the stream so far (``pending``
    holds its :class:`Exchange` once the response came), else that no response came."""
    if pending:
        return pending[0].output()
    from stepfork.trace.errors import INCOMPLETE_RESPONSE

    return LLMOutput({"status": None, "headers": {}, "incomplete": INCOMPLETE_RESPONSE})


def _joined(decoded: Any) -> bytes:
    """The bytes of a decoder's result: httpx's decoders return bytes, httpx2's yield chunks."""
    return decoded if isinstance(decoded, bytes) else b"".join(decoded)


def transport_error(lib: ModuleType, error_type: str, message: str, request: Any) -> BaseException | None:
    """The ``lib`` exception (``httpx2.ReadError``...) a recorded error type names, or None."""
    root, _, _ = error_type.partition(".")
    if root not in ("httpx", "httpx2", "httpcore", "httpcore2"):
        return None
    cls = getattr(lib, error_type.rpartition(".")[2], None)
    base = getattr(lib, "TransportError", None)
    if not (isinstance(cls, type) and base is not None and issubclass(cls, base)):
        return None
    try:
        return cls(message, request=request)  # type: ignore[no-any-return]
    except TypeError:
        return None


_THROUGH: dict[tuple[type, type], type] = {}


def through_class(error: type[BaseException], sdk_error: type[BaseException]) -> type[BaseException]:
    """A subclass of both ``error`` and ``sdk_error`` named like ``error`` (cached): how a replay error
    raised in an SDK's transport passes the SDK's own error handling untouched."""
    key = (error, sdk_error)
    cls = _THROUGH.get(key)
    if cls is None:
        cls = type(error.__name__, (error, sdk_error), {"__module__": error.__module__})
        _THROUGH[key] = cls
    return cls


def stream_of(output: Any) -> tuple[str, dict[str, Any] | None]:
    """``(form, stream)`` of a recorded output: ``("sse", {...})``, ``("eventstream", {...})``, or
    ``("", None)`` for a response read whole."""
    if isinstance(output, dict):
        for form in ("sse", "eventstream"):
            stream = output.get(form)
            if isinstance(stream, dict):
                return form, stream
    return "", None


def stream_bytes(form: str, events: list[Any]) -> bytes:
    """The body bytes of recorded events in ``form`` (SSE text, AWS event-stream messages)."""
    return encode_messages(events) if form == "eventstream" else encode_events(events)


class _Replay:
    """The recorded events of one stream and how it ended."""

    def __init__(
        self, stream: dict[str, Any], call: BoundaryCall, lib: ModuleType, request: Any, form: str = "sse"
    ) -> None:
        self._events: list[Any] = list(stream.get("events") or [])
        self._end = stream.get("end")
        self._error = stream.get("error") or {}
        self._call = call
        self._lib = lib
        self._request = request
        self._form = form

    def _chunks(self) -> Iterator[bytes]:
        # one chunk: the events arrived in network reads of their own sizes anyway, and the SDKs'
        # decoders split on event boundaries, not on reads
        if self._events:
            yield stream_bytes(self._form, self._events)

    def _after(self) -> None:
        """Raise what the recorded stream did after its last event (nothing when it finished)."""
        error = stream_end_error(
            {"end": self._end, "error": self._error},
            self._call,
            len(self._events),
            lambda error_type, message: transport_error(self._lib, error_type, message, self._request),
        )
        if error is not None:
            raise error


def stream_end_error(
    stream: dict[str, Any],
    call: BoundaryCall,
    event_count: int,
    rebuild: Callable[[str, str], BaseException | None],
) -> BaseException | None:
    """What a replayed stream raises after its recorded events: None when it ``finished``; for ``failed``
    the recorded transport error as the HTTP library's class (``rebuild(error_type, message)``), else
    ``RecordedDependencyError``; for ``consumer_closed`` ``ReplayMismatchError`` ``stream_exhausted`` (the
    agent reads past the point where the recorded consumer stopped)."""
    end = stream.get("end")
    if end == FINISHED:
        return None
    if end == FAILED:
        error = stream.get("error") or {}
        error_type = str(error.get("error_type", "UnknownError"))
        message = str(error.get("message", ""))
        again = rebuild(error_type, message)
        if again is not None:
            return again
        from stepfork.replay.errors import RecordedDependencyError

        return RecordedDependencyError(
            kind="llm",
            name=call.label,
            error_type=error_type,
            message=message,
            details={"events_before_failure": event_count},
        )
    from stepfork.replay.errors import ReplayMismatchError

    return ReplayMismatchError(
        f"{call.label}: the recorded consumer stopped this stream after {event_count} "
        "event(s); the replay read past that point",
        code="stream_exhausted",
    )


_CLASSES: dict[str, tuple[type, type, type, type]] = {}


def stream_classes(lib: ModuleType) -> tuple[type, type, type, type]:
    """``(RecordingSync, RecordingAsync, ReplaySync, ReplayAsync)`` byte-stream classes for ``lib``."""
    cached = _CLASSES.get(lib.__name__)
    if cached is not None:
        return cached

    class RecordingSync(lib.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any, exchange: Exchange) -> None:
            self._inner = inner
            self._exchange = exchange

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._inner:
                    self._exchange.feed(chunk)
                    yield chunk
            except GeneratorExit:
                self._exchange.finish(CONSUMER_CLOSED)
                raise
            except BaseException as exc:
                self._exchange.finish(FAILED, exc)
                raise
            self._exchange.finish(FINISHED)

        def close(self) -> None:
            self._exchange.finish(CONSUMER_CLOSED)
            self._inner.close()

    class RecordingAsync(lib.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any, exchange: Exchange) -> None:
            self._inner = inner
            self._exchange = exchange

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._inner:
                    self._exchange.feed(chunk)
                    yield chunk
            except GeneratorExit:
                self._exchange.finish(CONSUMER_CLOSED)
                raise
            except BaseException as exc:
                self._exchange.finish(FAILED, exc)
                raise
            self._exchange.finish(FINISHED)

        async def aclose(self) -> None:
            self._exchange.finish(CONSUMER_CLOSED)
            await self._inner.aclose()

    class ReplaySync(_Replay, lib.SyncByteStream):  # type: ignore[misc,name-defined]
        def __iter__(self) -> Iterator[bytes]:
            yield from self._chunks()
            self._after()

        def close(self) -> None:
            pass

    class ReplayAsync(_Replay, lib.AsyncByteStream):  # type: ignore[misc,name-defined]
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self._chunks():
                yield chunk
            self._after()

        async def aclose(self) -> None:
            pass

    classes = (RecordingSync, RecordingAsync, ReplaySync, ReplayAsync)
    _CLASSES[lib.__name__] = classes
    return classes
