"""The ``urllib3.HTTPResponse`` objects the urllib3 capture hands back (issue 30).

:func:`response_of` builds the response of a body in memory (a recorded output, a live body read whole);
:func:`streamed_response` one whose body is read chunk by chunk from a :class:`Chunks` reader: the live body
of a streamed response recorded as it passes (:class:`Tap`), or a replayed stream that did not finish
(:class:`Replayed`: its recorded bytes, then its recorded end raised). Its ``stream()`` hands the chunks out
as they come, as urllib3's own does for a chunked body (``requests``' ``iter_content``, botocore's event
streams read it so). Kept apart from the capture (:mod:`stepfork.integrations._urllib3_capture`), which
decides per request what happens; this module is what the caller reads.
"""

from __future__ import annotations

import http
import io
from collections.abc import Generator, Iterator
from typing import Any

from stepfork.integrations import _http_exchange as wire
from stepfork.integrations._http_replies import Reply
from stepfork.integrations._http_streams import Exchange

__all__ = ["Chunks", "Replayed", "Tap", "response_of", "streamed_response"]


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def response_of(
    pool: Any,
    reply: Reply,
    method: str,
    url: str,
    asked: dict[str, Any],
    retries: Any,
    *,
    reason: str | None = None,
) -> Any:
    """The ``HTTPResponse`` of a :class:`Reply` (its body in memory; a stream that did not finish raises
    its recorded end once read, :class:`Replayed`)."""
    if reply.after is not None:
        return streamed_response(pool, reply, Replayed(reply.body, reply.after), method, url, asked, retries)
    from urllib3 import HTTPHeaderDict, HTTPResponse
    from urllib3.util.retry import Retry

    return HTTPResponse(
        body=io.BytesIO(reply.body),
        headers=HTTPHeaderDict(reply.headers),
        status=reply.status,
        version=11,
        version_string="HTTP/1.1",
        reason=reason if reason is not None else _reason(reply.status),
        preload_content=asked["preload"],
        decode_content=asked["decode"],
        pool=pool,
        retries=retries if isinstance(retries, Retry) else None,
        request_method=method,
        request_url=url,
    )


def streamed_response(
    pool: Any, reply: Reply, reader: Chunks, method: str, url: str, asked: dict[str, Any], retries: Any
) -> Any:
    """An ``HTTPResponse`` whose body is ``reader``'s chunks, handed out as they come by ``stream()``."""
    from urllib3 import HTTPHeaderDict
    from urllib3.util.retry import Retry

    return _streamed_class()(
        body=reader,
        headers=HTTPHeaderDict(reply.headers),
        status=reply.status,
        version=11,
        version_string="HTTP/1.1",
        reason=_reason(reply.status),
        preload_content=asked["preload"],
        decode_content=asked["decode"],
        pool=pool,
        retries=retries if isinstance(retries, Retry) else None,
        request_method=method,
        request_url=url,
    )


_STREAMED: list[type] = []


def _streamed_class() -> type:
    """``urllib3.HTTPResponse`` whose ``stream()`` yields its body's chunks as they come (built once)."""
    if _STREAMED:
        return _STREAMED[0]
    from urllib3 import HTTPResponse

    class StreamedResponse(HTTPResponse):
        def stream(
            self, amt: int | None = 2**16, decode_content: bool | None = None
        ) -> Generator[bytes, None, None]:
            reader = self._fp
            if not isinstance(reader, Chunks) or self._has_decoded_content:
                yield from super().stream(amt, decode_content)
                return
            for chunk in reader.chunks():
                size = amt or len(chunk) or 1
                for at in range(0, len(chunk), size):
                    yield chunk[at : at + size]

    _STREAMED.append(StreamedResponse)
    return StreamedResponse


class Chunks(io.RawIOBase):
    """A body read chunk by chunk (:meth:`_next`), as a readable file for urllib3 and as
    :meth:`chunks` for ``stream()``."""

    def __init__(self) -> None:
        super().__init__()
        self._rest = b""

    def _next(self) -> bytes | None:
        """The next chunk, or None at the end."""
        raise NotImplementedError

    def chunks(self) -> Iterator[bytes]:
        """The rest of the body, chunk by chunk as it comes."""
        if self._rest:
            rest, self._rest = self._rest, b""
            yield rest
        while True:
            chunk = self._next()
            if chunk is None:
                return
            if chunk:
                yield chunk

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return b"".join(self.chunks())
        while not self._rest:
            chunk = self._next()
            if chunk is None:
                return b""
            self._rest = chunk
        data, self._rest = self._rest[:size], self._rest[size:]
        return data

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class Tap(Chunks):
    """The live body of a streamed response, its events recorded as they pass (recording)."""

    def __init__(self, live: Any, exchange: Exchange) -> None:
        super().__init__()
        self._live = live
        self._exchange = exchange
        self._source = live.stream(2**16, decode_content=True)  # a chunked body: chunk by chunk
        self._ended = False

    def _next(self) -> bytes | None:
        if self._ended:
            return None
        try:
            chunk = next(self._source)
        except StopIteration:
            self._end()
            self._exchange.finish(wire.FINISHED)
            return None
        except BaseException as exc:
            self._ended = True
            self._exchange.finish(wire.FAILED, exc)
            raise
        self._exchange.feed(chunk)
        return bytes(chunk)

    def _end(self) -> None:
        self._ended = True
        self._live.release_conn()

    def close(self) -> None:
        if not self.closed and not self._ended:  # the caller closed it before its end
            self._ended = True
            self._exchange.finish(wire.CONSUMER_CLOSED)
            self._live.close()
            self._live.release_conn()
        super().close()


class Replayed(Chunks):
    """The recorded events of a stream that did not finish: its bytes, then its recorded end raised."""

    def __init__(self, body: bytes, after: BaseException) -> None:
        super().__init__()
        self._body: bytes | None = body
        self._after = after

    def _next(self) -> bytes | None:
        if self._body is not None:
            body, self._body = self._body, None
            return body
        raise self._after
