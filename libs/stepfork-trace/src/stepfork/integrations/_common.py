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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stepfork.trace import boundary
from stepfork.trace.boundary import BoundaryCall, BoundaryHandler
from stepfork.trace.instrument import LLMOutput
from stepfork.trace.jsonable import to_jsonable

SDK_VERSIONS = "sdk-versions"
"""Name of the bundle extension file (``sdk-versions.json``) holding ``{sdk: version}`` of the recording."""

# Transport options of the SDK call that do not describe the request sent to the model.
_TRANSPORT_OPTIONS = frozenset({"extra_headers", "timeout"})


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


def wire_json(obj: Any) -> Any:
    """The JSON the provider sent, as the SDK model holds it: ``model_dump(mode="json", by_alias=True,
    exclude_unset=True)`` (fields the provider left out stay out, so the rebuilt object dumps the same)."""
    return obj.model_dump(mode="json", by_alias=True, exclude_unset=True)


@dataclass(frozen=True)
class Endpoint:
    """One instrumented SDK method.

    Attributes:
        provider: ``"openai"``, ``"anthropic"``.
        endpoint: the method's name in the input (``"chat.completions.create"``).
        return_type: the SDK's response type (replay rebuilds into it).
        chunk_type: the SDK's stream chunk/event type (a class or an annotated union).
        usage: response wire JSON -> ``{"prompt_tokens", "completion_tokens", "total_tokens"}`` (ints/None).
        stream_usage: the chunks' wire JSON -> the same dict.
        sdk: ``(distribution name, installed version)``.
        construct: the SDK's own builder ``construct(value=..., type_=...)`` (Stainless SDKs:
            ``_models.construct_type``): how the SDK built the object from the wire in the first place, so
            replay gives the agent the object it got then. None: validate with pydantic instead.
        sentinels: SDK "not given" sentinel types, dropped from the request.
        dump: object -> wire JSON for types that are not pydantic models (default :func:`wire_json`).
    """

    provider: str
    endpoint: str
    return_type: Any
    chunk_type: Any
    usage: Callable[[Any], dict[str, int | None]]
    stream_usage: Callable[[list[Any]], dict[str, int | None]]
    sdk: tuple[str, str]
    construct: Callable[..., Any] | None = None
    sentinels: tuple[type, ...] = ()
    dump: Callable[[Any], Any] | None = None

    def request(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The request parameters: ``kwargs`` without sentinels and transport options (headers, timeout)."""
        return {
            k: v
            for k, v in kwargs.items()
            if k not in _TRANSPORT_OPTIONS and not isinstance(v, self.sentinels)
        }

    def boundary_call(self, kwargs: Mapping[str, Any], *, stream: bool) -> BoundaryCall:
        """The boundary call of one request (input not redacted: the handler redacts)."""
        request = self.request(kwargs)
        model = request.get("model")
        model = model if isinstance(model, str) and model else "unknown"
        return BoundaryCall(
            kind="llm",
            name=model,
            model=model,
            provider=self.provider,
            input=to_jsonable({"endpoint": self.endpoint, "request": request}),
            # None: the recorded JSON comes back as is and rebuild() makes the SDK object (pydantic's
            # validation rejects responses the SDK itself accepts, e.g. fields added by a newer SDK).
            return_type=None,
            function=f"{self.sdk[0]}:{self.endpoint}",
        )

    def rebuild(self, value: Any, type_: Any, call: BoundaryCall, what: str) -> Any:
        """Rebuild recorded wire JSON into the SDK type ``type_`` (response or chunk).

        Raises:
            ReplayMismatchError: code ``sdk_rebuild_failed``, naming the installed SDK version and the
                recorded one (the bundle's ``sdk-versions.json``), when the SDK cannot build the object.
        """
        from stepfork.trace.errors import TraceSerializationError
        from stepfork.trace.jsonable import from_jsonable

        try:
            decoded = from_jsonable(value)
            if self.construct is not None and isinstance(decoded, dict):
                return self.construct(value=decoded, type_=type_)
            return from_jsonable(decoded, type_)
        except (TraceSerializationError, TypeError, ValueError, KeyError, AttributeError) as exc:
            # AttributeError: an SDK validator reading a recorded value of the wrong shape (a string where
            # LangChain's message validator calls .get) must not escape as a traceback from its internals
            from stepfork.replay.errors import ReplayMismatchError

            name, version = self.sdk
            raise ReplayMismatchError(
                f"{call.label}: {name} {version} (installed) cannot rebuild the recorded {what} of "
                f"{self.endpoint}, recorded with {name} {recorded_sdk_version(name)}: {exc}",
                code="sdk_rebuild_failed",
            ) from exc

    def output(self, response: Any) -> LLMOutput:
        """What the recorder stores for a response: its wire JSON and token usage."""
        wire = self.wire(response)
        return LLMOutput(wire, **self.usage(wire))

    def wire(self, obj: Any) -> Any:
        """The wire JSON of a response or chunk (``dump``, else :func:`wire_json`)."""
        return self.dump(obj) if self.dump is not None else wire_json(obj)


def recorded_sdk_version(name: str) -> str:
    """The version of SDK ``name`` the active replay's bundle recorded (its ``sdk-versions.json``).

    Returns ``"(version not recorded)"`` when the session has no bundle path or the file lacks the SDK.
    """
    metadata = getattr(boundary.active_handler(), "metadata", None)
    versions = metadata(SDK_VERSIONS) if callable(metadata) else None
    version = versions.get(name) if isinstance(versions, dict) else None
    return version if isinstance(version, str) else "(version not recorded)"


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
    from stepfork.integrations import _streams

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
    from stepfork.integrations import _streams

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
