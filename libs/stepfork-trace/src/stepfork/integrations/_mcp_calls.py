"""Every request an MCP client session sends is one tool call (docs/integrations.md, "MCP"; issue 29).

The ``mcp`` SDK's ``ClientSession`` turns each of its methods into one request through its *dispatcher*
(``send_raw_request(method, params) -> result dict``; ``mcp.shared.dispatcher``): the seam between the
session's typed layer and the wire. :class:`BoundaryDispatcher` wraps a session's dispatcher and hands
each request to the active Stepfork session as a ``BoundaryCall(kind="tool")``:

- name: ``SERVER/TOOL`` for ``tools/call`` (``weather/get_forecast``), ``SERVER/METHOD`` for every other
  request (``weather/tools/list``, ``weather/resources/read``, ``weather/prompts/get``...). SERVER is the
  name the server gave in its handshake (``serverInfo.name``); the handshake itself (``initialize``, the
  2026 ``server/discover`` probe), sent before that name is known, is ``mcp/initialize`` /
  ``mcp/server/discover``. MCP tool names cannot hold ``/``, so a tool never takes a method's name.
- input: a tool's ``arguments`` (so a changed argument diverges at ``$.city``); for the other requests
  their ``params`` without ``_meta`` (per-request stamps: client info, progress tokens).
- output: the result as the server sent it (JSON), from which the SDK builds its own types
  (``CallToolResult``, ``ListToolsResult``...) on replay as it did on the wire.
- failures: a ``tools/call`` result with ``isError: true`` is the call's recorded failure
  (:class:`ToolErrorResult`) and the agent still gets the result, as the SDK returns it; a JSON-RPC error
  response (``MCPError``) is recorded as the SDK's exception and raised again as one on replay
  (``stepfork.trace.control_flow`` carries both payloads).

Nothing here imports the SDK: :mod:`stepfork.integrations.mcp` does, and installs this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall

HANDSHAKE_SERVER = "mcp"
"""The server part of the name of requests sent before the server named itself (the handshake)."""

SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
"""Where a 2026 ``server/discover`` result names its server, in ``_meta``
(``mcp_types.SERVER_INFO_META_KEY``)."""

_TOOL_CALL = "tools/call"
_HANDSHAKES = frozenset({"initialize", "server/discover"})


class ToolErrorResult(Exception):
    """A ``tools/call`` result with ``isError: true``, carried through the boundary as the call's failure.

    Attributes:
        result: the result as the server sent it (JSON); the SDK builds a ``CallToolResult`` with
            ``is_error=True`` from it, as it did when the call was recorded.

    ``str()`` is the text of the result's text parts (the recorded message), or ``isError result``.
    """

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        texts = [
            part.get("text")
            for part in result.get("content") or ()
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        super().__init__("\n".join(t for t in texts if t) or "isError result")


def call_name(server: str, method: str, params: Mapping[str, Any] | None) -> str:
    """The tool call name of a request (module docstring): ``SERVER/TOOL`` or ``SERVER/METHOD``."""
    if method == _TOOL_CALL and params is not None and isinstance(params.get("name"), str):
        return f"{server}/{params['name']}"
    return f"{server}/{method}"


def call_input(method: str, params: Mapping[str, Any] | None) -> Any:
    """The recorded and matched input of a request: a tool's arguments (``{}`` when none), else the
    request's params without ``_meta``."""
    if method == _TOOL_CALL:
        arguments = params.get("arguments") if params is not None else None
        return dict(arguments) if isinstance(arguments, Mapping) else {}
    return {key: value for key, value in (params or {}).items() if key != "_meta"}


def boundary_call(server: str, method: str, params: Mapping[str, Any] | None) -> BoundaryCall:
    """The ``BoundaryCall(kind="tool")`` of one request to ``server`` (input not redacted: the handler
    redacts)."""
    from stepfork.trace.jsonable import to_jsonable

    return BoundaryCall(
        "tool",
        call_name(server, method, params),
        to_jsonable(call_input(method, params)),
        function=f"mcp:{method}",
    )


def server_name(method: str, result: Any) -> str | None:
    """The name a handshake result gives its server (``serverInfo.name``, or a discover result's
    ``_meta`` stamp), or None."""
    if method not in _HANDSHAKES or not isinstance(result, dict):
        return None
    info = result.get("serverInfo")
    if info is None and isinstance(result.get("_meta"), dict):
        info = result["_meta"].get(SERVER_INFO_META_KEY)
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) and name else None


def error_result(method: str, result: Any) -> bool:
    """True for a ``tools/call`` result the server marked ``isError``."""
    return method == _TOOL_CALL and isinstance(result, dict) and result.get("isError") is True


class BoundaryDispatcher:
    """A session's dispatcher whose requests go through the active Stepfork session (module docstring).

    Args:
        inner: the session's own dispatcher (``JSONRPCDispatcher``, ``DirectDispatcher``...); everything
            but ``send_raw_request`` goes to it untouched (``run``, ``notify``, its attributes).
        note: called with the active handler before each recorded request (the SDK version note), or None.
        auto: True for a session Stepfork instrumented on its own
            (:func:`stepfork.trace._after_import.capture_mcp_sessions`), not the
            user (``instrument_mcp``, ``stepfork record --``): in a ``live`` replay its requests go out
            untouched, as an uninstrumented session's did.

    Attributes:
        inner, auto: as given. server: the server's name once its handshake answered (None before).
    """

    def __init__(self, inner: Any, note: Any = None, *, auto: bool = False) -> None:
        self.inner = inner
        self.server: str | None = None
        self._note = note
        self.auto = auto

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def run(self, *args: Any, **kwargs: Any) -> None:
        """The inner dispatcher's receive loop."""
        await self.inner.run(*args, **kwargs)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        """Send a notification through the inner dispatcher (notifications are not calls: no answer)."""
        await self.inner.notify(method, params, opts)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        """Send one request through the active session and return its result dict.

        No session: the inner dispatcher's, untouched. Recording: the request goes out and is recorded
        (an ``isError`` tool result as the call's failure, still returned). Replay: the recorded result,
        or the recorded ``MCPError`` raised again; the wrapped transport is not used.

        Raises:
            MCPError: the server answered with a JSON-RPC error (live or recorded).
            ReplayError: from a replay, before anything is sent (a divergence, a refused call).
        """
        handler, orphan = boundary.resolve_handler()
        if handler is None or (self.auto and handler.is_replay and getattr(handler, "mode", None) == "live"):
            result: dict[str, Any] = await self.inner.send_raw_request(method, params, opts)
            self._learn(method, result)
            return result
        server = HANDSHAKE_SERVER if method in _HANDSHAKES else (self.server or HANDSHAKE_SERVER)
        call = boundary_call(server, method, params)
        if self._note is not None:
            self._note(handler)

        async def body() -> dict[str, Any]:
            answer: dict[str, Any] = await self.inner.send_raw_request(method, params, opts)
            if error_result(method, answer):
                raise ToolErrorResult(answer)
            return answer

        try:
            result = await handler.ahandle(call, body, orphan=orphan)
        except ToolErrorResult as failed:  # recorded (or replayed) as a failure; the SDK gets the result
            result = failed.result
        self._learn(method, result)
        return result

    def _learn(self, method: str, result: Any) -> None:
        name = server_name(method, result)
        if name is not None:
            self.server = name
