"""The MCP SDK's transports under Stepfork (docs/integrations.md, "MCP"; issue 29).

While a replay serves MCP calls from the recording (every mode but ``live``), no MCP server may start and
no request may leave: the transports the agent opens are replaced by a *sealed peer* at the two places
where the SDK reaches out, both looked up when a connection opens, so they hold however the agent imported
``stdio_client``/``streamable_http_client``:

- stdio: ``mcp.client.stdio._create_platform_compatible_process`` (what spawns the server) returns a
  :class:`SealedProcess` instead: pipes to the sealed peer, no process;
- streamable HTTP: ``StreamableHTTPTransport.post_writer`` (what sends every POST, and starts the GET
  stream and the final DELETE) hands each message to the sealed peer instead; no request is made.

An instrumented session (:class:`~stepfork.integrations._mcp_calls.BoundaryDispatcher`) is served above
the transport and sends it nothing but notifications, which the peer drops. A request that still reaches
the peer (a session that is not instrumented) goes to the replay as a tool call named ``mcp/METHOD``, so
the replay serves it when the recording has it or reports the divergence by name; the SDK gets the
answer, or a JSON-RPC error saying why there is none.

Outside such a replay the SDK runs untouched, except that the HTTP client of a streamable-HTTP
connection is no longer captured by the HTTP capture (:func:`uncapture`): its requests are the MCP calls'
own transport, recorded once as those calls, never as HTTP calls of their own.
"""

from __future__ import annotations

import json
import math
from typing import Any

from stepfork.integrations._mcp_calls import HANDSHAKE_SERVER, ToolErrorResult, boundary_call
from stepfork.trace import boundary

INTERNAL_ERROR = -32603
"""The JSON-RPC code of the peer's refusals (``mcp_types.INTERNAL_ERROR``)."""

_MARK = "__stepfork_mcp__"


def sealed() -> bool:
    """True while a replay that serves tools from the recording (any mode but ``live``) is active."""
    handler, _ = boundary.resolve_handler()
    return handler is not None and handler.is_replay and getattr(handler, "mode", "frozen") != "live"


async def _never_live() -> Any:
    raise RuntimeError("the MCP server is not started during this replay")


async def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The sealed peer's JSON-RPC answer to one message the client sent, or None (notifications and
    responses are dropped). See the module docstring."""
    method, request_id = message.get("method"), message.get("id")
    if not isinstance(method, str) or request_id is None:
        return None
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    handler, orphan = boundary.resolve_handler()
    try:
        if handler is None:
            raise RuntimeError("no Stepfork session is active")
        call = boundary_call(HANDSHAKE_SERVER, method, message.get("params"))
        reply["result"] = await handler.ahandle(call, _never_live, orphan=orphan)
    except ToolErrorResult as failed:
        reply["result"] = failed.result
    except Exception as exc:
        error = getattr(exc, "error", None)  # the SDK's MCPError, recorded and raised again
        code = getattr(error, "code", None)
        if isinstance(code, int):
            reply["error"] = {"code": code, "message": str(getattr(error, "message", exc))}
        else:
            text = f"Stepfork: the MCP server is not started during this replay; {exc}"
            reply["error"] = {"code": INTERNAL_ERROR, "message": text}
    return reply


class _SealedStdin:
    def __init__(self, process: SealedProcess) -> None:
        self._process = process

    async def send(self, item: bytes) -> None:
        await self._process.feed(item)

    async def aclose(self) -> None:
        self._process.stop()


class SealedProcess:
    """What the SDK's stdio transport gets instead of a server process during a sealed replay: stdin lines
    go to the sealed peer, its answers come out of stdout; closing stdin ends it (exit status 0)."""

    pid = 0

    def __init__(self) -> None:
        import anyio

        self._out, self.stdout = anyio.create_memory_object_stream[bytes](math.inf)
        self.stdin = _SealedStdin(self)
        self.stderr = None
        self.returncode: int | None = None
        self._pending = b""

    async def feed(self, data: bytes) -> None:
        """Answer each whole JSON-RPC line in ``data`` (with what came before it)."""
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            reply = await answer(message) if isinstance(message, dict) else None
            if reply is not None:
                self._out.send_nowait(json.dumps(reply).encode() + b"\n")

    def stop(self) -> None:
        """Close stdin: the peer's stdout ends and the "process" has exited."""
        self.returncode = 0
        self._out.close()

    async def wait(self) -> int:
        """The exit status, once stdin is closed (it is, by then, in the SDK's shutdown)."""
        return self.returncode or 0


async def _sealed_post_writer(write_stream_reader: Any, read_stream_writer: Any, write_stream: Any) -> None:
    """``StreamableHTTPTransport.post_writer`` during a sealed replay: each message goes to the peer."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    async with write_stream_reader, read_stream_writer, write_stream:
        async for session_message in write_stream_reader:
            data = session_message.message.model_dump(by_alias=True, mode="json", exclude_none=True)
            reply = await answer(data)
            if reply is not None:
                await read_stream_writer.send(SessionMessage(jsonrpc_message_adapter.validate_python(reply)))


def uncapture(client: Any) -> None:
    """Take the HTTP capture's transports out of an httpx2 client (module docstring); idempotent."""
    from stepfork.integrations._http_capture import AsyncCaptureTransport, CaptureTransport

    def bare(transport: Any) -> Any:
        while isinstance(transport, (CaptureTransport, AsyncCaptureTransport)):
            transport = transport.inner
        return transport

    if hasattr(client, "_transport"):
        client._transport = bare(client._transport)
        client._mounts = {pattern: bare(t) for pattern, t in getattr(client, "_mounts", {}).items()}


def install() -> None:
    """Put the sealed peer in the SDK's stdio and streamable-HTTP transports (module docstring);
    idempotent. Raises ImportError when the installed ``mcp`` lacks either place (an SDK this release of
    Stepfork does not know: a replay could start its servers)."""
    from mcp.client import stdio, streamable_http

    spawn = getattr(stdio, "_create_platform_compatible_process", None)
    transport: Any = getattr(streamable_http, "StreamableHTTPTransport", None)
    post_writer = getattr(transport, "post_writer", None)
    if spawn is None or post_writer is None:
        raise ImportError(
            "this release of the mcp SDK does not spawn stdio servers or send HTTP requests where Stepfork "
            "expects (mcp.client.stdio._create_platform_compatible_process, "
            "StreamableHTTPTransport.post_writer); install an mcp release that Stepfork supports"
        )
    if not getattr(spawn, _MARK, False):

        async def create_process(*args: Any, **kwargs: Any) -> Any:
            if sealed():
                return SealedProcess()
            return await spawn(*args, **kwargs)

        setattr(create_process, _MARK, True)
        create_process.__wrapped__ = spawn  # type: ignore[attr-defined]
        stdio._create_platform_compatible_process = create_process
    if not getattr(post_writer, _MARK, False):

        async def guarded_post_writer(
            self: Any,
            client: Any,
            write_stream_reader: Any,
            read_stream_writer: Any,
            write_stream: Any,
            *args: Any,
            **kwargs: Any,
        ) -> None:
            if sealed():
                await _sealed_post_writer(write_stream_reader, read_stream_writer, write_stream)
                return
            uncapture(client)
            streams = (write_stream_reader, read_stream_writer, write_stream)
            await post_writer(self, client, *streams, *args, **kwargs)

        setattr(guarded_post_writer, _MARK, True)
        guarded_post_writer.__wrapped__ = post_writer  # type: ignore[attr-defined]
        transport.post_writer = guarded_post_writer
