"""Streamed LLM responses: passed through chunk by chunk, recorded with their boundaries and ending.

Recording (issue 6, "Streaming"): the ``llm_request`` is written when the stream is opened
(``RecordingSession.open_call``, which pushes no scope: calls made while the agent consumes the stream are
its siblings, not nested in it). Each chunk is handed to the caller as it arrives, then appended to the
record. The ``llm_response`` is written once, when the stream ends, with the output::

    {"stream": {"end": "finished" | "consumer_closed" | "failed", "chunk_count": k,
                "chunks": [<wire JSON of each chunk>...], "error": null | {"error_type", "message"}}}

``consumer_closed``: the consumer closed the stream, dropped it, or the recording ended after k chunks.
``failed``: the SDK raised while streaming after k chunks (re-raised untouched to the agent). A failure
*opening* the stream is an ordinary recorded LLM failure. Nothing here resets a ContextVar, so a stream
closed from another task or finalized by the garbage collector cannot break the recorder.

Replay: the session serves the record at the point the stream is opened; :class:`ReplayedStream` /
:class:`AsyncReplayedStream` yield the chunks rebuilt into the SDK's chunk type, then stop (finished),
raise ``RecordedDependencyError`` (failed), or raise ``ReplayMismatchError`` ``stream_exhausted`` when the
agent reads past the point where the recorded consumer stopped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.instrument import LLMOutput

if TYPE_CHECKING:
    from stepfork.integrations._endpoint import Endpoint

FINISHED = "finished"
CONSUMER_CLOSED = "consumer_closed"
FAILED = "failed"


class StreamRecord:
    """The chunks seen so far and how the stream ended; thread-safe (a stream may end in another thread)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.chunks: list[Any] = []
        self.end: str | None = None
        self.error: dict[str, str] | None = None
        self._lock = threading.Lock()

    def add(self, chunk: Any) -> None:
        """Append one chunk's wire JSON."""
        data = self.endpoint.wire(chunk)
        with self._lock:
            self.chunks.append(data)

    def output(self, end: str | None = None) -> LLMOutput:
        """The ``llm_response`` output (see the module docstring) with the stream's token usage."""
        with self._lock:
            chunks = list(self.chunks)
            stream = {
                "end": end or self.end or CONSUMER_CLOSED,
                "chunk_count": len(chunks),
                "chunks": chunks,
                "error": self.error,
            }
        return LLMOutput({"stream": stream}, **self.endpoint.stream_usage(chunks))

    def ending(self, end: str, exc: BaseException | None = None) -> bool:
        """Set the ending once; True the first time."""
        with self._lock:
            if self.end is not None:
                return False
            self.end = end
            if exc is not None:
                from stepfork.trace.eventlog import exception_message, qualified_type_name

                self.error = {"error_type": qualified_type_name(exc), "message": exception_message(exc)}
            return True


class _Recording:
    """State shared by the sync and async recording proxies."""

    def __init__(self, raw: Any, recorder: Any, opened: Any, record: StreamRecord) -> None:
        self._raw = raw
        self._recorder = recorder
        self._opened = opened
        self._record = record

    def _end(self, end: str, exc: BaseException | None = None) -> None:
        if self._record.ending(end, exc):
            self._recorder.close_call(self._opened, self._record.output())

    def __getattr__(self, name: str) -> Any:  # the SDK stream's other attributes (response, ...)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._raw, name)

    def __del__(self) -> None:  # dropped without being finished or closed: the consumer stopped
        with contextlib.suppress(Exception):  # nothing may escape a finalizer; the session end records it
            self._end(CONSUMER_CLOSED)


class RecordingStream(_Recording):
    """Proxy of a synchronous SDK stream during recording: iterate it, ``close()`` it, use it in ``with``."""

    _iterator: Iterator[Any] | None = None

    def __iter__(self) -> RecordingStream:
        return self

    def __next__(self) -> Any:
        if self._iterator is None:
            self._iterator = iter(self._raw)
        try:
            chunk = next(self._iterator)
        except StopIteration:
            self._end(FINISHED)
            raise
        except BaseException as exc:
            self._end(FAILED, exc)
            raise
        self._record.add(chunk)
        return chunk

    def close(self) -> None:
        """Close the SDK stream; records ``consumer_closed`` unless it already ended."""
        self._end(CONSUMER_CLOSED)
        closer = getattr(self._raw, "close", None)
        if closer is not None:
            closer()

    def __enter__(self) -> RecordingStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncRecordingStream(_Recording):
    """Proxy of an asynchronous SDK stream during recording: ``async for``, ``await close()``,
    ``async with``."""

    _iterator: AsyncIterator[Any] | None = None

    def __aiter__(self) -> AsyncRecordingStream:
        return self

    async def __anext__(self) -> Any:
        if self._iterator is None:
            self._iterator = self._raw.__aiter__()
        try:
            chunk = await self._iterator.__anext__()
        except StopAsyncIteration:
            self._end(FINISHED)
            raise
        except BaseException as exc:
            self._end(FAILED, exc)
            raise
        self._record.add(chunk)
        return chunk

    async def close(self) -> None:
        """Close the SDK stream (from any task); records ``consumer_closed`` unless it already ended."""
        self._end(CONSUMER_CLOSED)
        closer = getattr(self._raw, "close", None) or getattr(self._raw, "aclose", None)
        if closer is not None:
            result = closer()
            if hasattr(result, "__await__"):
                await result

    aclose = close

    async def __aenter__(self) -> AsyncRecordingStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def record_stream(
    recorder: Any, call: BoundaryCall, endpoint: Endpoint, send: Callable[[], Any], orphan: bool
) -> RecordingStream:
    """Open a stream under recording: the request event now, the response when the stream ends.

    Raises what opening the stream raises (recorded as the call's failure first).
    """
    record = StreamRecord(endpoint)
    opened = recorder.open_call(call, record.output, orphan=orphan)
    try:
        raw = send()
    except BaseException as exc:
        recorder.fail_call(opened, exc)
        raise
    return RecordingStream(raw, recorder, opened, record)


async def arecord_stream(
    recorder: Any, call: BoundaryCall, endpoint: Endpoint, send: Callable[[], Awaitable[Any]], orphan: bool
) -> AsyncRecordingStream:
    """Async :func:`record_stream`."""
    record = StreamRecord(endpoint)
    opened = recorder.open_call(call, record.output, orphan=orphan)
    try:
        raw = await send()
    except BaseException as exc:
        recorder.fail_call(opened, exc)
        raise
    return AsyncRecordingStream(raw, recorder, opened, record)


class _Replayed:
    """The recorded chunks of one stream, rebuilt lazily into the SDK's chunk type."""

    def __init__(self, endpoint: Endpoint, call: BoundaryCall, output: Any) -> None:
        stream = output.get("stream") if isinstance(output, dict) else None
        if not isinstance(stream, dict) or not isinstance(stream.get("chunks"), list):
            raise self._mismatch(call, "the recorded response of this call is not a stream", "bad_stream")
        self._endpoint = endpoint
        self._call = call
        self._chunks: list[Any] = stream["chunks"]
        self._end = stream.get("end")
        self._error = stream.get("error") or {}
        self._position = 0
        self.closed = False

    @staticmethod
    def _mismatch(call: BoundaryCall, message: str, code: str) -> Exception:
        from stepfork.replay.errors import ReplayMismatchError

        return ReplayMismatchError(f"{call.label}: {message}", code=code)

    def _next(self) -> Any:
        if self.closed:
            raise self._mismatch(self._call, "the replayed stream was read after close()", "stream_closed")
        if self._position < len(self._chunks):
            raw = self._chunks[self._position]
            self._position += 1
            return self._endpoint.rebuild(
                raw, self._endpoint.chunk_type, self._call, f"stream chunk {self._position - 1}"
            )
        if self._end == FINISHED:
            return _DONE
        if self._end == FAILED:
            from stepfork.replay.errors import RecordedDependencyError

            raise RecordedDependencyError(
                kind="llm",
                name=self._call.label,
                error_type=str(self._error.get("error_type", "UnknownError")),
                message=str(self._error.get("message", "")),
                details={"chunks_before_failure": len(self._chunks)},
            )
        raise self._mismatch(
            self._call,
            f"the recorded consumer stopped this stream after {len(self._chunks)} chunk(s); the replay read "
            "past that point",
            "stream_exhausted",
        )


_DONE = object()


class ReplayedStream(_Replayed):
    """A replayed synchronous stream: iterate it for the SDK's chunk objects; ``close()``, ``with``."""

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        item = self._next()
        if item is _DONE:
            raise StopIteration
        return item

    def close(self) -> None:
        """Stop the stream (no more chunks are served)."""
        self.closed = True

    def __enter__(self) -> ReplayedStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncReplayedStream(_Replayed):
    """A replayed asynchronous stream: ``async for`` the SDK's chunk objects; ``await close()``."""

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        item = self._next()
        if item is _DONE:
            raise StopAsyncIteration
        return item

    async def close(self) -> None:
        """Stop the stream (no more chunks are served)."""
        self.closed = True

    aclose = close

    async def __aenter__(self) -> AsyncReplayedStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
