"""MCP integration: ``instrument_mcp(session)`` (docs/integrations.md, "MCP"; issue 29).

Every request an ``mcp.ClientSession`` sends (``call_tool``, ``list_tools``, ``read_resource``,
``get_prompt``, the handshake, and the rest) is a Stepfork tool call named by server and tool
(``weather/get_forecast``, ``weather/tools/list``...; :mod:`stepfork.integrations._mcp_calls` has the
names, inputs and outputs). In a replay that serves tools from the recording, the MCP server is never
started and nothing is sent (:mod:`stepfork.integrations._mcp_transports`): the SDK builds its own result
types from the recorded answers.

Importing this module works without the SDK (``stepfork-trace[mcp]``); :func:`instrument_mcp` then raises
the install hint. With the SDK, importing it also puts the sealed peer in the SDK's transports (inert
outside a replay), so import it before the agent opens its first connection, as an ordinary import at the
top of the agent does. ``stepfork record -- python agent.py`` and ``stepfork replay BUNDLE -- python
agent.py`` need neither: they instrument every session the program makes (:func:`enable`).
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

from stepfork.integrations._mcp_calls import BoundaryDispatcher, ToolErrorResult

__all__ = ["ToolErrorResult", "enable", "instrument_mcp"]

_MARK = "__stepfork_mcp__"
_SDK_DISTRIBUTION = "mcp"


def _sdk() -> Any:
    """The ``mcp`` package, with the sealed peer installed in its transports.

    Raises:
        ImportError: ``install "stepfork-trace[mcp]" to use the MCP integration`` when it is missing, or
            the transports' own ImportError for an SDK release Stepfork does not know.
    """
    try:
        sdk = importlib.import_module("mcp")
    except ImportError as exc:
        raise ImportError('install "stepfork-trace[mcp]" to use the MCP integration') from exc
    from stepfork.integrations import _mcp_transports

    _mcp_transports.install()
    return sdk


def _sdk_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_SDK_DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def _note_sdk(handler: Any) -> None:
    """Add the mcp SDK's version to the recording's ``sdk-versions.json`` (recording sessions only)."""
    from stepfork.integrations._common import SDK_VERSIONS

    add = getattr(handler, "add_metadata", None)
    if add is None or handler.is_replay:
        return
    known = getattr(handler, "metadata", {}).get(SDK_VERSIONS)
    if not (isinstance(known, dict) and _SDK_DISTRIBUTION in known):
        add(SDK_VERSIONS, {_SDK_DISTRIBUTION: _sdk_version()}, merge=True)


def _wrap_session(session: Any, *, auto: bool = False) -> None:
    dispatcher = session._dispatcher
    if not isinstance(dispatcher, BoundaryDispatcher):
        session._dispatcher = BoundaryDispatcher(dispatcher, _note_sdk, auto=auto)
    elif not auto:  # the user instruments a session Stepfork instrumented on its own: theirs from now on
        dispatcher.auto = False


def instrument_mcp(session: Any) -> Any:
    """Instrument an MCP client session in place and return it (idempotent).

    Args:
        session: an ``mcp.ClientSession``, before its ``initialize()`` (right after ``async with
            ClientSession(read, write) as session:``); or an ``mcp.Client`` before ``async with``, whose
            session (made on entering) is then instrumented from its first request.

    Returns:
        ``session``. With no active Stepfork session each request costs one ContextVar read more.

    Raises:
        ImportError: the ``mcp`` SDK is not installed (``pip install "stepfork-trace[mcp]"``).
        TypeError: ``session`` is neither a ``ClientSession`` nor a ``Client``.
    """
    sdk = _sdk()
    if isinstance(session, sdk.ClientSession):
        _wrap_session(session)
        return session
    if isinstance(session, sdk.Client):
        build = session._build_session
        if not getattr(build, _MARK, False):

            async def build_session(exit_stack: Any) -> Any:
                made = await build(exit_stack)
                _wrap_session(made)
                return made

            setattr(build_session, _MARK, True)
            session._build_session = build_session
        return session
    raise TypeError(f"instrument_mcp expects an mcp.ClientSession or mcp.Client, got {type(session)!r}")


_explicit = False
"""True once :func:`enable` was called by the user's choice (``stepfork record --``), not ``auto``."""


def enable(*, auto: bool = False) -> None:
    """Instrument every ``mcp.ClientSession`` made from now on in this process (zero-code recording and
    replay, :mod:`stepfork.integrations.autocapture`); idempotent. Needs the SDK imported or importable.

    Args:
        auto: True when Stepfork enables it on its own (a recording or replay session started:
            :func:`stepfork.trace._after_import.capture_mcp_sessions`): the sessions are then
            instrumented the same way, except that a ``live`` replay leaves them untouched. A call without
            ``auto`` makes every session made from then on the user's.

    Raises:
        ImportError: as :func:`instrument_mcp`.
    """
    global _explicit
    sdk = _sdk()
    _explicit = _explicit or not auto
    cls = sdk.ClientSession
    init = cls.__init__
    if getattr(init, _MARK, False):
        return

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _wrap_session(self, auto=not _explicit)

    setattr(__init__, _MARK, True)
    __init__.__wrapped__ = init  # type: ignore[attr-defined]
    cls.__init__ = __init__


# The sealed peer must be in place before the agent's first connection (module docstring). Without the SDK
# (or with one Stepfork does not know), instrument_mcp and enable raise the ImportError instead.
with contextlib.suppress(ImportError):
    _sdk()
