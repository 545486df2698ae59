"""What every SDK integration shares: the boundary call of one request, sync and async (docs/integrations.md).

An SDK method (``client.chat.completions.create``) is replaced on the client instance by a wrapper that
builds ``BoundaryCall(kind="llm", name=model, model=model, provider=..., input=to_jsonable({"endpoint",
"request"}), return_type=<SDK response type>)`` and hands it to the active handler
(:func:`stepfork.trace.boundary.resolve_handler`); with no handler the SDK method runs untouched.

- Recording: the body calls the SDK and returns ``LLMOutput(wire JSON, tokens)``; the agent gets the SDK's
  own object back (not the JSON), so recording changes nothing it sees.
- Replay: the session serves the recorded wire JSON and :meth:`Endpoint.rebuild` builds the SDK's own type
  from it the way the SDK did when the response arrived; a failure is ``ReplayMismatchError``
  ``sdk_rebuild_failed`` naming the installed SDK version and the one recorded (``sdk-versions.json``).
- Streams (``stream=True``): see :mod:`stepfork.integrations._streams`.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from stepfork.integrations import _streams
from stepfork.integrations._endpoint import SDK_VERSIONS as SDK_VERSIONS
from stepfork.integrations._endpoint import Endpoint as Endpoint
from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryHandler


def require(module: str, extra: str, label: str) -> Any:
    """Import ``module`` or raise ImportError with the install hint of STYLE.md.

    Raises:
        ImportError: ``install "stepfork-trace[<extra>]" to use the <label> integration``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f'install "stepfork-trace[{extra}]" to use the {label} integration') from exc


def sdk_version(module: Any) -> tuple[str, str]:
    """``(package name, installed version)`` of an imported SDK module (``("openai", "3.50.0")``), as an
    integration notes it for ``sdk-versions.json``."""
    return (module.__name__, str(getattr(module, "__version__", "unknown")))


def lazy_attributes(owner: str, implementation: str, names: frozenset[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for the integration module ``owner``: each of ``names`` is read
    from the private module ``implementation`` (the code that needs the SDK), imported on first use, so
    ``import owner`` works without the SDK (issue 32) and ``owner.NAME`` raises the install hint then.

    Raises (from the returned function):
        ImportError: the SDK is not installed (the install hint, from ``implementation``'s ``require``).
        AttributeError: a name ``owner`` does not have.
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(implementation), name)
        raise AttributeError(f"module {owner!r} has no attribute {name!r}")

    return __getattr__


def sdk_sentinels(module: Any) -> tuple[type, ...]:
    """The "not given" sentinel types of a Stainless SDK module (``NotGiven``, ``Omit``) that it has."""
    return tuple(t for t in (getattr(module, "NotGiven", None), getattr(module, "Omit", None)) if t)


def sdk_constructor(module: Any) -> Callable[..., Any] | None:
    """The SDK's own ``_models.construct_type`` (how it builds objects from wire JSON), or None."""
    return getattr(getattr(module, "_models", None), "construct_type", None)


def usage_fields(usage: Any, prompt: str, completion: str, total: str | None = None) -> dict[str, int | None]:
    """Token counts from a usage JSON object with the provider's key names; None where absent."""

    def num(key: str | None) -> int | None:
        value = usage.get(key) if isinstance(usage, dict) and key else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    p, c, t = num(prompt), num(completion), num(total)
    if t is None and p is not None and c is not None:
        t = p + c
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": t}


def note_sdk(handler: BoundaryHandler, endpoint: Endpoint) -> None:
    """Add the SDK version to the recording's ``sdk-versions.json`` (recording sessions only)."""
    add = getattr(handler, "add_metadata", None)
    if add is not None and not handler.is_replay:
        add(SDK_VERSIONS, {endpoint.sdk[0]: endpoint.sdk[1]}, merge=True)


def call_sync(endpoint: Endpoint, kwargs: dict[str, Any], send: Callable[..., Any]) -> Any:
    """Send one request through the boundary (sync SDK method ``send``); see the module docstring.

    Returns the SDK's response (live or rebuilt), or a stream (recording proxy, live, or replayed).
    Raises what the SDK raises (recorded first), or replay errors before anything is sent.
    """
    handler, orphan = boundary.resolve_handler()
    if handler is None:
        return send(**kwargs)
    handler = boundary.handler_for_call(handler)  # a fork: its replay or its recording, this call
    stream = kwargs.get("stream") is True
    call = endpoint.boundary_call(kwargs, stream=stream)
    note_sdk(handler, endpoint)
    if stream and not handler.is_replay and hasattr(handler, "open_call"):
        return _streams.record_stream(handler, call, endpoint, lambda: send(**kwargs), orphan)
    live: list[Any] = []

    def body() -> Any:
        result = send(**kwargs)
        live.append(result)
        return result if stream else endpoint.output(result)

    out = handler.handle(call, body, orphan=orphan)
    if live:
        return live[0]
    if stream:
        return _streams.ReplayedStream(endpoint, call, out)
    return endpoint.rebuild(out, endpoint.return_type, call, "response")


async def call_async(endpoint: Endpoint, kwargs: dict[str, Any], send: Callable[..., Awaitable[Any]]) -> Any:
    """Async :func:`call_sync` for the SDKs' async clients; same results and errors."""
    handler, orphan = boundary.resolve_handler()
    if handler is None:
        return await send(**kwargs)
    handler = boundary.handler_for_call(handler)  # a fork: its replay or its recording, this call
    stream = kwargs.get("stream") is True
    call = endpoint.boundary_call(kwargs, stream=stream)
    note_sdk(handler, endpoint)
    if stream and not handler.is_replay and hasattr(handler, "open_call"):
        return await _streams.arecord_stream(handler, call, endpoint, lambda: send(**kwargs), orphan)
    live: list[Any] = []

    async def body() -> Any:
        result = await send(**kwargs)
        live.append(result)
        return result if stream else endpoint.output(result)

    out = await handler.ahandle(call, body, orphan=orphan)
    if live:
        return live[0]
    if stream:
        return _streams.AsyncReplayedStream(endpoint, call, out)
    return endpoint.rebuild(out, endpoint.return_type, call, "response")


def patch_method(resource: Any, name: str, wrapper_factory: Callable[[Any], Any]) -> None:
    """Replace ``resource.<name>`` on the instance by ``wrapper_factory(original)`` once (idempotent)."""
    original = getattr(resource, name)
    if getattr(original, "__stepfork_wrapped__", False):
        return
    wrapper = wrapper_factory(original)
    wrapper.__stepfork_wrapped__ = True
    wrapper.__wrapped__ = original
    setattr(resource, name, wrapper)


def sync_wrapper(endpoint: Endpoint) -> Callable[[Any], Any]:
    """A factory for :func:`patch_method` wrapping a synchronous SDK method (keyword arguments only)."""

    def factory(original: Callable[..., Any]) -> Callable[..., Any]:
        def create(**kwargs: Any) -> Any:
            return call_sync(endpoint, kwargs, original)

        create.__doc__ = original.__doc__
        return create

    return factory


def async_wrapper(endpoint: Endpoint) -> Callable[[Any], Any]:
    """A factory for :func:`patch_method` wrapping an asynchronous SDK method (keyword arguments only)."""

    def factory(original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def create(**kwargs: Any) -> Any:
            return await call_async(endpoint, kwargs, original)

        create.__doc__ = original.__doc__
        return create

    return factory
