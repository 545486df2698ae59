"""A tool's call as boundary input (part of :mod:`stepfork.trace.instrument`): :class:`_ToolSpec`, the
per-tool data computed once, on the first call that reaches a session (the signature, the fast binding of
a simple one, the return annotation, the context parameters), and per call the arguments bound with
defaults applied, ``self``/``cls`` and context arguments left out (:mod:`stepfork.trace.context_args`),
LangGraph resume values added (:mod:`stepfork.trace.control_flow`), made JSON (:func:`_jsonable`) into a
:class:`~stepfork.trace.boundary.BoundaryCall`.

Imports nothing heavy: no pydantic (``stepfork.trace.jsonable`` is imported on the first call that reaches
a session). Every name the per-call path reads is a global of this module, as it was in ``instrument``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any, cast

from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.context_args import EXCLUDED_KEY, PLAIN_TYPES, is_context_value
from stepfork.trace.control_flow import RESUME_KEY, resume_values

_modules = sys.modules

_to_jsonable: Callable[..., Any] | None = None


def _jsonable(value: Any, serializer: Callable[[Any], Any] | None = None) -> Any:
    """``to_jsonable(value)``, importing :mod:`stepfork.trace.jsonable` on first use (keeps import light).

    ``serializer`` (REFERENCE-API.md ``serializer=``) converts values with no JSON form of their own."""
    global _to_jsonable
    if _to_jsonable is None:
        from stepfork.trace.jsonable import to_jsonable

        _to_jsonable = to_jsonable
    if serializer is None:
        return _to_jsonable(value)
    return _to_jsonable(value, serializer=serializer)


def _serializer_for(own: Callable[[Any], Any] | None, handler: Any) -> Callable[[Any], Any] | None:
    """The call's own serializer, else the active session's (``RecordingSession(serializer=...)``)."""
    return own if own is not None else getattr(handler, "serializer", None)


class _ToolSpec:
    """Per-tool data computed once, on the first call that reaches a session (not at decoration)."""

    __slots__ = (
        "_context",
        "_defaults",
        "_func",
        "_hints_done",
        "_names",
        "_npos",
        "_return_type",
        "_sig",
        "drop_first",
        "exclude",
        "function",
        "name",
        "policy",
        "serializer",
    )

    def __init__(
        self,
        func: Callable[..., Any],
        name: str,
        policy: str,
        drop_first: bool | None,
        exclude: frozenset[str] = frozenset(),
        serializer: Callable[[Any], Any] | None = None,
    ) -> None:
        self._func = func
        self.exclude = exclude
        self.serializer = serializer
        self._context: frozenset[str] = exclude  # + annotated context parameters, once the signature is read
        self.name = name
        self.policy = policy
        self.function = f"{getattr(func, '__module__', '?')}:{getattr(func, '__qualname__', name)}"
        self._sig: inspect.Signature | bool | None = False  # False: not computed yet; None: unavailable
        self._return_type: Any = None
        self._hints_done = False
        self.drop_first = drop_first
        self._names: tuple[str, ...] | None = None
        self._npos = 0
        self._defaults: dict[str, Any] = {}

    def signature(self) -> inspect.Signature | None:
        if self._sig is False:
            try:
                sig: inspect.Signature | None = inspect.signature(self._func)
            except (TypeError, ValueError):
                sig = None
            params = list(sig.parameters.values()) if sig is not None else []
            if self.drop_first is None:
                # A method defined in a class body: its first parameter is self/cls (C9).
                self.drop_first = bool(params) and params[0].name in ("self", "cls")
            simple = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            if sig is not None and all(p.kind in simple for p in params):
                # Fast binding (no *args, **kwargs or positional-only): names, positional count, defaults.
                self._names = tuple(p.name for p in params)
                self._npos = sum(p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)
                self._defaults = {p.name: p.default for p in params if p.default is not p.empty}
            if sig is not None:
                from stepfork.trace.context_args import annotated_context_parameters

                self._context = self.exclude | annotated_context_parameters(self._func)
            self._sig = sig
        return cast("inspect.Signature | None", self._sig)

    def return_type(self) -> Any:
        if not self._hints_done:
            import typing

            try:
                self._return_type = typing.get_type_hints(self._func).get("return")
            except Exception:  # unresolvable forward references: replay returns the JSON form
                self._return_type = None
            self._hints_done = True
        return self._return_type

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
        """Bound arguments with defaults applied and self/cls dropped; None when binding fails."""
        sig = self._sig
        if isinstance(sig, bool):  # False: not computed yet
            sig = self.signature()
        if sig is None:
            return {"args": list(args), "kwargs": kwargs}
        names = self._names
        if names is not None and len(args) <= self._npos:
            fast = self._fast_bind(names, args, kwargs)
            if fast is not None:
                return self._without_context(fast)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return None
        bound.apply_defaults()
        arguments = bound.arguments
        if self.drop_first and arguments:
            arguments = dict(arguments)
            del arguments[next(iter(arguments))]
        return self._without_context(arguments)

    def _without_context(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """``arguments`` minus the context arguments (stepfork.trace.context_args), which are listed under
        ``"$excluded"``, plus the LangGraph task's resume values under ``"$resume"``
        (stepfork.trace.control_flow.resume_values); the same dict when there are neither."""
        context = self._context
        resumed = resume_values() if "langgraph.types" in _modules else None
        if resumed is None and not context and PLAIN_TYPES.issuperset(map(type, arguments.values())):
            return arguments  # the common case, decided in C: no value can be a context object
        dropped = [n for n, v in arguments.items() if n in context or is_context_value(v)]
        if not dropped and resumed is None:
            return arguments
        kept = {n: v for n, v in arguments.items() if n not in dropped}
        if dropped:
            kept[EXCLUDED_KEY] = sorted(dropped)
        if resumed is not None:  # interrupt()'s answers are an input of the call (control_flow.py)
            kept[RESUME_KEY] = resumed
        return kept

    def _fast_bind(
        self, names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> dict[str, Any] | None:
        """What ``sig.bind`` + ``apply_defaults`` give for a simple signature; None: use ``sig.bind``."""
        given = len(args)
        defaults = self._defaults
        if not kwargs:  # positional only, the common case: the same dict, built without the loop below
            arguments = dict(zip(names, args, strict=False))  # len(args) <= len(names)
            for name in names[given:]:
                if name not in defaults:
                    return None  # a missing argument: sig.bind reports it
                arguments[name] = defaults[name]
            if self.drop_first:
                del arguments[names[0]]
            return arguments
        if any(k not in names or names.index(k) < given for k in kwargs):
            return None  # unknown or duplicate keyword: sig.bind reports it
        arguments = {}
        for index, name in enumerate(names):
            if index < given:
                arguments[name] = args[index]
            elif name in kwargs:
                arguments[name] = kwargs[name]
            elif name in defaults:
                arguments[name] = defaults[name]
            else:
                return None  # a missing argument: sig.bind reports it
        if self.drop_first:
            del arguments[names[0]]
        return arguments

    def call(self, arguments: dict[str, Any], handler: Any = None, name: str | None = None) -> BoundaryCall:
        return_type = self._return_type if self._hints_done else self.return_type()
        serializer = _serializer_for(self.serializer, handler)
        # positional: BoundaryCall(kind, name, input, provider, model, replay_policy, return_type, function)
        return BoundaryCall(
            "tool",
            name or self.name,
            _jsonable(arguments, serializer),
            None,
            None,
            self.policy,
            return_type,
            self.function,
        )
