"""The instrumented boundaries agents call: ``@trace_tool``, ``llm_request``, ``allm_request``.

These know only the boundary protocol (:mod:`stepfork.trace.boundary`), never recording or replay. With no
active session a decorated function is called untouched after one ContextVar read and one list check; with a
session the call is described as a :class:`~stepfork.trace.boundary.BoundaryCall` and handed to the
session's ``handle``/``ahandle`` (docs/architecture.md, "The boundary"; DESIGN.md "Data flow").

Importing this module imports nothing heavy: no pydantic. ``stepfork.trace.jsonable`` is imported on the
first call that reaches a session, and ``typing.get_type_hints`` runs once per tool, lazily. How a tool's
arguments become the call's input (``_ToolSpec``: binding, context arguments, resume values, JSON) is
:mod:`stepfork.trace._tool_spec`.

Token usage and cost: an ``llm_request`` ``call`` may return :class:`LLMOutput` instead of the bare value.
The recorder then stores the token counts and ``cost_usd`` on the ``llm_response`` event, and every path
(no session, recording, replay) hands the caller ``LLMOutput.value``: the agent code sees the same value.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from stepfork.trace import boundary as _boundary
from stepfork.trace._tool_spec import _jsonable as _jsonable
from stepfork.trace._tool_spec import _serializer_for, _ToolSpec
from stepfork.trace.boundary import BoundaryCall

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# The replay_policy values of schema 0.1 (interop/REFERENCE-NOTES.md 1.6).
REPLAY_POLICIES = frozenset({"frozen", "live", "manual", "forbidden", "derived"})


# Read directly so the no-session path is one ContextVar read and one list truth test (no call).
_active = _boundary._active_handler
_registered = _boundary._process_handlers


@dataclass(frozen=True, slots=True)
class LLMOutput:
    """What an ``llm_request`` ``call`` may return to report token usage and cost with its value.

    Attributes:
        value: the model's output; the caller of ``llm_request`` receives exactly this.
        prompt_tokens, completion_tokens, total_tokens: token counts (ints >= 0) or None when unknown.
        cost_usd: the call's cost in US dollars (float >= 0) or None.

    The recorder writes these fields on the ``llm_response`` event (REFERENCE-NOTES.md 1.4) and sums
    ``cost_usd`` into ``totals.cost_usd``.
    """

    value: Any
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None


def _unwrap(result: Any) -> Any:
    return result.value if isinstance(result, LLMOutput) else result


def _check_policy(replay_policy: str) -> str:
    policy = str(replay_policy)
    if policy not in REPLAY_POLICIES:
        raise ValueError(f"replay_policy must be one of {sorted(REPLAY_POLICIES)}, got {replay_policy!r}")
    return policy


def _wrap(
    func: Callable[..., Any],
    name: str | None,
    policy: str,
    drop_first: bool | None,
    exclude: frozenset[str] = frozenset(),
    serializer: Callable[[Any], Any] | None = None,
) -> Any:
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise ValueError(
            f"trace_tool cannot instrument generator function {func!r}: a streaming tool has "
            "no single result to record or replay; collect the items and return a list"
        )
    default_name = getattr(func, "__name__", None) or type(func).__name__  # partials, callable objects
    spec = _ToolSpec(func, name or default_name, policy, drop_first, exclude, serializer)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            handler = _active.get()
            orphan = False
            if handler is None:
                if not _registered:
                    return await func(*args, **kwargs)
                handler, orphan = _boundary.resolve_handler()
                if handler is None:
                    return await func(*args, **kwargs)
            arguments = spec.bind(args, kwargs)
            if arguments is None:
                return await func(*args, **kwargs)  # raises the undecorated TypeError (C9)
            return await handler.ahandle(
                spec.call(arguments, handler), functools.partial(func, *args, **kwargs), orphan=orphan
            )

        setattr(async_wrapper, INSTRUMENTED, True)
        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        handler = _active.get()
        orphan = False
        if handler is None:
            if not _registered:
                return func(*args, **kwargs)
            handler, orphan = _boundary.resolve_handler()
            if handler is None:
                return func(*args, **kwargs)
        arguments = spec.bind(args, kwargs)
        if arguments is None:
            return func(*args, **kwargs)  # raises the undecorated TypeError (C9)
        return handler.handle(
            spec.call(arguments, handler), functools.partial(func, *args, **kwargs), orphan=orphan
        )

    setattr(wrapper, INSTRUMENTED, True)
    return wrapper


_inside_method: ContextVar[Any] = ContextVar("stepfork_tool_method", default=None)
"""The tool object whose method boundary (:func:`tool_boundary` with a ``name(self)``) runs its body here."""

INSTRUMENTED = "__stepfork_tool__"
"""The attribute (True) of every function that already is a tool boundary: what ``@trace_tool`` returns and
what :func:`tool_boundary` wraps a framework tool's function in. ``functools.wraps`` copies it onto a
framework's own wrapper of such a function, so :func:`is_instrumented` sees a tool stacked over
``@trace_tool`` and the framework capture leaves it alone: one call, recorded once."""


def is_instrumented(func: Any) -> bool:
    """True when ``func`` (a function, bound method, ``functools.partial``, or a wrapper whose
    ``__wrapped__`` chain leads there) is already a tool boundary (:data:`INSTRUMENTED`)."""
    seen = 0
    while func is not None and seen < 32:  # a bounded walk: a __wrapped__ cycle must not hang a call
        if getattr(func, INSTRUMENTED, False) is True:
            return True
        func = (
            getattr(func, "__wrapped__", None)
            or getattr(func, "__func__", None)
            or (func.func if isinstance(func, functools.partial) else None)
        )
        seen += 1
    return False


def tool_boundary(
    func: Callable[..., Any],
    name: str | Callable[[Any], str],
    *,
    target: Callable[..., Any] | None = None,
) -> Any:
    """The tool boundary ``@trace_tool(name=name)`` makes of ``func``, for a framework's tool whose function
    the user did not decorate (stepfork.integrations._framework_tools; issue 30): the same input (the
    arguments bound to ``func``'s signature, context arguments left out, LangGraph resume values added),
    output, failures and replay.

    Args:
        func: the tool's own function: its signature binds the arguments, its return annotation rebuilds a
            replayed result.
        name: the call's name; or, for a method wrapped on its class, ``name(self)`` (the first argument,
            left out of the input like ``self`` always is).
        target: what the wrapper calls with the same arguments (default ``func``): a framework's own
            wrapper of ``func`` (LlamaIndex's ``sync_to_async``). Its kind (async or not) is the wrapper's.

    Returns:
        The wrapper: with no session it calls ``target`` untouched after one ContextVar read; it is
        :data:`INSTRUMENTED`.
    """
    body = func if target is None else target
    spec = _ToolSpec(func, "" if callable(name) else name, "frozen", True if callable(name) else None)

    def enter(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool, BoundaryCall | None]:
        """``(handler, orphan, call)``; no call: run the body untouched."""
        handler, orphan = _boundary.resolve_handler() if _registered else (None, False)
        if handler is None:
            return None, False, None
        if callable(name):  # a method: the tool object is the first argument
            if not args or _inside_method.get() is args[0]:
                return None, False, None  # its own body calling its other entry (``_arun`` -> ``_run``)
            label = name(args[0])
        else:
            label = name
        arguments = spec.bind(args, kwargs)
        if arguments is None:  # does not bind: the body raises its own TypeError, unrecorded
            return None, False, None
        return handler, orphan, spec.call(arguments, handler, label)

    def run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not callable(name):
            return body(*args, **kwargs)
        token = _inside_method.set(args[0])
        try:
            return body(*args, **kwargs)
        finally:
            _inside_method.reset(token)

    if inspect.iscoroutinefunction(body):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            handler, orphan, call = enter(args, kwargs)
            if call is None:
                return await body(*args, **kwargs)

            async def awaited() -> Any:
                if not callable(name):
                    return await body(*args, **kwargs)
                token = _inside_method.set(args[0])
                try:
                    return await body(*args, **kwargs)
                finally:
                    _inside_method.reset(token)

            return await handler.ahandle(call, awaited, orphan=orphan)

        setattr(async_wrapper, INSTRUMENTED, True)
        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        handler, orphan, call = enter(args, kwargs)
        if call is None:
            return body(*args, **kwargs)
        return handler.handle(call, lambda: run(args, kwargs), orphan=orphan)

    setattr(wrapper, INSTRUMENTED, True)
    return wrapper


@overload
def trace_tool(func: F, /) -> F:
    """Bare use, ``@trace_tool``: returns the instrumented function."""


@overload
def trace_tool(
    *,
    name: str | None = None,
    replay_policy: str = "frozen",
    exclude: Iterable[str] = (),
    serializer: Callable[[Any], Any] | None = None,
) -> Callable[[F], F]:
    """Keyword use, ``@trace_tool(name=...)``: returns the decorator."""


def trace_tool(
    func: Any = None,
    /,
    *,
    name: str | None = None,
    replay_policy: str = "frozen",
    exclude: Iterable[str] = (),
    serializer: Callable[[Any], Any] | None = None,
) -> Any:
    """Instrument a tool: ``@trace_tool`` or ``@trace_tool(name="search", replay_policy="live")``.

    Works on functions, async functions, methods, classmethods and staticmethods (above or below the
    ``@classmethod``/``@staticmethod`` line). ``functools.wraps`` keeps ``inspect.signature`` unchanged (C9).

    Args:
        func: the function (bare use).
        name: the tool name recorded in events; defaults to ``func.__name__``.
        replay_policy: one of ``frozen``, ``live``, ``manual``, ``forbidden``, ``derived``
            (REFERENCE-NOTES.md 1.6); stored on the events and honoured by replay.
        exclude: parameter names left out of the recorded and matched input (a context argument:
            ``exclude={"ctx"}``). Known framework context arguments (pydantic-ai ``RunContext``,
            LangChain ``RunnableConfig`` and callback managers, LangGraph injected state, store and
            runtime) are left out without being named (:mod:`stepfork.trace.context_args`); the input
            lists what was left out under ``"$excluded"``.
        serializer: turns an argument with no JSON form of its own into one (REFERENCE-API.md); None:
            the active session's. The converted input is recorded and matched in replay alike.

    Returns:
        The wrapped callable (or a decorator when called with keywords only).

    Raises:
        ValueError: at decoration, for a generator or async generator function, or an unknown policy.

    At call time: no active session -> the function is called untouched. With a session the arguments are
    bound to the signature with defaults applied (C12), ``self``/``cls`` dropped; a call that does not bind
    calls the function so it raises its own TypeError before anything is recorded or replayed (C9); the
    input is ``to_jsonable(arguments)`` and the return annotation (``typing.get_type_hints``, None when
    absent or unresolvable) travels as ``BoundaryCall.return_type``. A signature that ``inspect`` cannot
    read gives the input ``{"args": [...], "kwargs": {...}}`` (REFERENCE-NOTES.md 1.4).
    """
    policy = _check_policy(replay_policy)
    if isinstance(exclude, str):
        raise TypeError("trace_tool(exclude=...) takes a collection of parameter names, not one string")
    excluded = frozenset(exclude)
    if not all(isinstance(item, str) for item in excluded):
        raise TypeError("trace_tool(exclude=...) takes parameter names (strings)")

    def decorate(target: Any) -> Any:
        if isinstance(target, classmethod):
            return classmethod(_wrap(target.__func__, name, policy, True, excluded, serializer))
        if isinstance(target, staticmethod):
            return staticmethod(_wrap(target.__func__, name, policy, False, excluded, serializer))
        if not callable(target):
            raise TypeError(f"trace_tool expects a function, got {type(target).__name__}")
        return _wrap(target, name, policy, None, excluded, serializer)

    if func is not None:
        return decorate(func)
    return decorate


def _llm_call(
    model: str,
    input: Any,
    provider: str | None,
    replay_policy: str,
    serializer: Callable[[Any], Any] | None = None,
) -> BoundaryCall:
    if not isinstance(model, str) or not model:
        raise ValueError("llm_request needs a non-empty model name")
    return BoundaryCall(
        kind="llm",
        name=model,
        input=_jsonable(input, serializer),
        provider=provider,
        model=model,
        replay_policy=_check_policy(replay_policy),
    )


def llm_request(
    *,
    model: str,
    input: Any,
    call: Callable[[], Any],
    provider: str | None = None,
    replay_policy: str = "frozen",
    serializer: Callable[[Any], Any] | None = None,
) -> Any:
    """Make an LLM call through the boundary: ``call()`` runs, is recorded, or is served by replay.

    Args:
        model: the model name (non-empty); with ``provider`` it identifies the call in replay.
        input: the request (any value ``to_jsonable`` accepts); recorded on ``llm_request`` after redaction.
        call: a zero-argument callable doing the real request. It may return :class:`LLMOutput` to report
            token usage and cost.
        provider: the provider (``"openai"``) or None.
        replay_policy: the per-call policy (REFERENCE-NOTES.md 1.6).
        serializer: converts parts of ``input`` with no JSON form of their own (REFERENCE-API.md); None:
            the active session's.

    Returns:
        What ``call()`` returned, or its ``.value`` when it returned an :class:`LLMOutput`; under frozen
        replay the recorded output (JSON).

    Raises:
        Whatever ``call()`` raises (recorded, then re-raised untouched); ValueError for an empty model or an
        unknown policy when a session is active; replay errors from a replay session.
    """
    handler = _active.get()
    orphan = False
    if handler is None:
        if not _registered:
            return _unwrap(call())
        handler, orphan = _boundary.resolve_handler()
        if handler is None:
            return _unwrap(call())
    boundary_call = _llm_call(model, input, provider, replay_policy, _serializer_for(serializer, handler))
    return _unwrap(handler.handle(boundary_call, call, orphan=orphan))


async def allm_request(
    *,
    model: str,
    input: Any,
    call: Callable[[], Awaitable[Any]],
    provider: str | None = None,
    replay_policy: str = "frozen",
    serializer: Callable[[Any], Any] | None = None,
) -> Any:
    """Async :func:`llm_request`: ``call`` returns an awaitable (for example ``lambda: client.create(...)``).

    Same arguments, return value and errors as :func:`llm_request`.
    """
    handler = _active.get()
    orphan = False
    if handler is None:
        if not _registered:
            return _unwrap(await call())
        handler, orphan = _boundary.resolve_handler()
        if handler is None:
            return _unwrap(await call())
    boundary_call = _llm_call(model, input, provider, replay_policy, _serializer_for(serializer, handler))
    return _unwrap(await handler.ahandle(boundary_call, call, orphan=orphan))
