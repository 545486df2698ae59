"""``raise_as``: raise a recorded failure as the user's own exception class (C8; opt-in, default off).

A recorded failure names its type only as text: ``app.errors.RateLimited`` (Stepfork's recorder qualifies
it) or ``ToolTimeout`` (the reference's bundles store short names). Replay never imports a class a bundle
names: a trace is data (spec replay.txt: "Trace bundles are treated as data"), and only the entrypoint the
user names is imported. So by default a recorded failure is raised as
:class:`~stepfork.replay.errors.RecordedDependencyError`, which an agent's ``except RateLimited:`` never
catches; a failure of one of Python's builtin types (``ValueError``, ``TimeoutError``...: the interpreter's
own classes, nothing imported) as that builtin combined with RecordedDependencyError
(:func:`builtin_exception`, :func:`combined_instance`). With
``raise_as={"app.errors.RateLimited": RateLimited}`` the user hands replay, in their own code, the
classes their ``except`` clauses expect; the bundle's text only selects among them, as a Temporal failure
converter selects by the failure's type string.

Which entry applies to a recorded type ``T`` (docs/decisions.md; the rule of the replay report's
REPRODUCED FAILURE, which compares the qualified name or its last component):

1. the key equal to ``T``;
2. else a key whose last dotted component equals ``T``'s, when one of the two is unqualified (no dot): a key
   ``RateLimited`` covers ``app.errors.RateLimited``; a key ``app.errors.ToolTimeout`` covers a reference
   bundle's ``ToolTimeout``. Two qualified names in different modules never match (another class).

What is raised for a matched entry (docs/replay.md, "Raising recorded failures as your own exceptions"):

- a class ``C``: an instance of a subclass of ``(C, RecordedDependencyError)`` made here and named like
  ``C`` (same ``__module__``/``__qualname__``), so ``except C`` and ``except RecordedDependencyError`` both
  catch it. ``C.__init__`` and a ``__new__`` written in Python do not run (their arguments were not
  recorded); the builtin base's ``__new__`` builds the instance. ``str()`` is the recorded message
  (sanitized), ``args == (message,)``; the recorded fields (kind, name, error_type, message, chain,
  details, diagnostic) are instance attributes, except where ``C`` has a read-only property of that name;
- when ``C`` cannot be combined (its ``__init_subclass__`` refuses subclasses, or the builtin
  constructor needs more than a message, as ``ExceptionGroup``'s): ``C(message)`` with the
  RecordedDependencyError as ``__cause__`` (so only ``except C`` catches it), and a
  :class:`RaiseAsWarning`;
- a factory ``f(error) -> Exception`` (any other callable, given as the callable itself: a
  ``"MODULE:CLASS"`` string, as ``--raise-as`` and an exported test's RAISE_AS give it, must name a class
  deriving from BaseException, see :func:`resolve_raise_as`): its exception, with the
  RecordedDependencyError as ``__cause__``;
- when none of that yields an ``Exception`` (``C(message)`` or the factory raises, or the factory returns
  something else, a ``KeyboardInterrupt`` or another BaseException that is not an Exception included):
  the RecordedDependencyError itself, as without ``raise_as``, with a note saying why and a
  RaiseAsWarning. Replay never crashes on a mapping.

A class must be an ``Exception`` subclass: a BaseException that is not an Exception (KeyboardInterrupt,
SystemExit, asyncio.CancelledError, ``BaseException`` itself) is refused when the mapping is built
(ValueError). Raised into the agent it would not reach its ``except`` clauses but stop the replay, and look
like the user's own Ctrl-C or exit (docs/decisions.md). Each entry that cannot be applied as asked gives one
RaiseAsWarning per distinct reason, not one per raise.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from types import FunctionType
from typing import Any, TypeAlias, cast

from stepfork.replay.entrypoint import EntrypointError, resolve_entrypoint
from stepfork.replay.errors import RecordedDependencyError, recorded_failure_text, short_type_name

RaiseAsTarget: TypeAlias = type[Exception] | Callable[[RecordedDependencyError], Exception]
"""An ``Exception`` subclass, or a factory taking the RecordedDependencyError and returning the exception
to raise (what is not an ``Exception`` is not raised at run time either, see the module docstring)."""

_FIELDS = ("kind", "name", "error_type", "message", "chain", "details", "diagnostic")


class RaiseAsWarning(UserWarning):
    """A ``raise_as`` entry could not be applied as asked; the message says what was raised instead."""


class RaiseAsClassError(EntrypointError):
    """A ``raise_as`` value ``"MODULE:CLASS"`` cannot be resolved (an EntrypointError, so a ValueError).

    Attributes:
        key: the recorded type name the value was given for.
        detail: the resolver's own message (``cannot import module ...``, ``module ... has no attribute
            ...``); ``str()`` is ``raise_as['<key>']: <detail>``.
        code, spec: as :class:`~stepfork.replay.entrypoint.EntrypointError` (``spec`` is the value).
    """

    def __init__(self, key: str, error: EntrypointError) -> None:
        super().__init__(f"raise_as[{key!r}]: {error}", code=error.code, spec=error.spec)
        self.key = key
        self.detail = str(error)


def resolve_raise_as(
    mapping: Mapping[str, RaiseAsTarget | str] | None,
    *,
    import_root: str | os.PathLike[str] | None = None,
    exceptions_only: bool = False,
) -> Mapping[str, RaiseAsTarget] | None:
    """``mapping`` with each ``"MODULE:CLASS"`` string value imported like an entrypoint.

    The strings are trusted: the user wrote them (an option, a literal in their test), never the bundle.
    ``import_root`` as :func:`~stepfork.replay.entrypoint.resolve_entrypoint` (default: the working
    directory). A string names a CLASS (``--raise-as TYPE=MODULE:CLASS``, an exported test's RAISE_AS):
    what it resolves to must be a class deriving from BaseException; a function or another callable is
    refused here, not called as a factory at the first recorded failure (a factory is the Python API's,
    given as the callable itself; docs/decisions.md). Whether a BaseException class is an ``Exception``
    is :class:`RaiseAs`'s to refuse, with its own reason, unless ``exceptions_only``: then such a class
    named by a string is refused here too, with that reason (an exported test's RAISE_AS, so ``stepfork
    run`` reads it as a check that could not execute, not as a failed one). Other values are kept;
    ``None``, or anything but a mapping, is returned unchanged for :class:`RaiseAs` to accept or refuse.

    Raises:
        RaiseAsClassError: a string that is not ``MODULE:CLASS``, names a module that cannot be imported,
            an attribute that does not exist, something not callable, or (code
            ``not_an_exception_class``) something that is not a class deriving from BaseException.
    """
    if not isinstance(mapping, Mapping):
        return mapping
    resolved: dict[str, RaiseAsTarget] = {}
    for key, value in mapping.items():
        target: Any = value
        if isinstance(value, str):
            try:
                target = resolve_entrypoint(value, import_root=import_root)
            except EntrypointError as exc:
                if exc.code == "not_callable":  # a value such as a constant: say what it is not
                    why = f"{value!r} is not a class; expected an Exception subclass"
                    refused = EntrypointError(why, code="not_an_exception_class", spec=value)
                    raise RaiseAsClassError(str(key), refused) from exc
                raise RaiseAsClassError(str(key), exc) from exc
            problem = _not_an_exception_class(value, target)
            if problem is None and exceptions_only and not issubclass(target, Exception):
                problem = _base_exception_reason(target)
            if problem is not None:
                error = EntrypointError(problem, code="not_an_exception_class", spec=value)
                raise RaiseAsClassError(str(key), error)
        resolved[key] = target
    return resolved


def _not_an_exception_class(spec: str, target: object) -> str | None:
    """Why ``target``, what ``spec`` (``MODULE:CLASS``) resolved to, is not a class deriving from
    BaseException, or None when it is one."""
    if not isinstance(target, type):
        what = type(target).__name__
        return f"{spec!r} is not a class but a {what}; expected an Exception subclass"
    if not issubclass(target, BaseException):
        return f"{spec!r} is a class that does not derive from BaseException; expected an Exception subclass"
    return None


def _base_exception_reason(target: type) -> str:
    """Why ``target``, a class deriving from BaseException but not from Exception, cannot be raised."""
    return (
        f"must be an Exception subclass, not {target.__qualname__}: a BaseException that is not an "
        "Exception would stop the replay instead of reaching the agent's except clauses"
    )


def _covers(key: str, recorded: str) -> bool:
    if "." in key and "." in recorded:
        return False  # both qualified and not equal: another module, another class
    return short_type_name(key) == short_type_name(recorded)


def matching_key(keys: Iterable[str], recorded: str) -> str | None:
    """The key of ``keys`` (``raise_as`` keys) that applies to the recorded type ``recorded``, or None.

    The module docstring's rules: the equal key, else the one key covering ``recorded`` by its last
    dotted component when one of the two names is unqualified.

    Raises:
        ValueError: two keys or more cover ``recorded`` by last component alone (``a.X`` and ``b.X`` for
            a recorded ``X``): which one the user meant is unknown.
    """
    candidates = list(keys)
    if recorded in candidates:
        return recorded
    covering = sorted(key for key in candidates if _covers(key, recorded))
    if len(covering) > 1:
        raise ValueError(f"raise_as keys {covering} all match the recorded error type {recorded!r}; keep one")
    return covering[0] if covering else None


def recorded_error_types(calls: Iterable[Any]) -> frozenset[str]:
    """The error types of the failed calls among ``calls`` (:class:`~stepfork.replay.plan.RecordedCall`,
    the visible plan of a session): the names ``raise_as`` keys are matched against; a failure recorded
    without a type counts as ``UnknownError``."""
    return frozenset(call.error_type or "UnknownError" for call in calls if call.status == "error")


def unmatched_keys(keys: Iterable[str], recorded_types: Iterable[str]) -> tuple[str, ...]:
    """The keys of ``keys`` that apply to none of ``recorded_types`` (in the order given): allowed, so
    one mapping can serve many bundles, but for one bundle often a typo worth a warning.

    Raises:
        ValueError: as :func:`matching_key`, for an ambiguous recorded type.
    """
    candidates = list(keys)
    used = {matching_key(candidates, recorded) for recorded in recorded_types}
    return tuple(key for key in candidates if key not in used)


def _recorded_str(self: BaseException) -> str:
    return str(self.args[0]) if self.args else ""


def _recorded_repr(self: BaseException) -> str:
    return f"{type(self).__name__}({_recorded_str(self)!r})"


def _builtin_new(cls: type) -> Callable[..., Any]:
    """The first ``__new__`` along the MRO that is not written in Python (BaseException's, OSError's...)."""
    for klass in cls.__mro__:
        new = vars(klass).get("__new__")
        if new is not None and not isinstance(getattr(new, "__func__", new), FunctionType):
            return cast("Callable[..., Any]", new)
    return BaseException.__new__  # not reached: BaseException defines __new__


class _Entry:
    """One ``raise_as`` entry: the user's key and target, and the combined class when there is one."""

    __slots__ = ("combined", "key", "problem", "target", "warned")

    def __init__(self, key: str, target: RaiseAsTarget) -> None:
        self.key = key
        self.target = target
        self.combined: type[RecordedDependencyError] | None = None
        self.problem: str | None = None
        self.warned: set[str] = set()  # one warning per reason, not one per raise (module docstring)
        if isinstance(target, type):
            try:
                self.combined = _combine(target)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # the user's class refused: fall back, never crash
                self.problem = f"{type(exc).__name__}: {exc}"

    def describe(self) -> str:
        target = self.target
        name = target.__qualname__ if isinstance(target, type) else getattr(target, "__qualname__", "factory")
        return f"raise_as[{self.key!r}] ({name})"

    def warn(self, reason: str, message: str) -> None:
        """Emit ``message`` as a RaiseAsWarning unless this entry already warned for ``reason``."""
        if reason not in self.warned:
            self.warned.add(reason)
            warnings.warn(message, RaiseAsWarning, stacklevel=4)


def _combine(cls: type[BaseException]) -> type[RecordedDependencyError]:
    if issubclass(cls, RecordedDependencyError):
        return cls
    namespace = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "__str__": _recorded_str,
        "__repr__": _recorded_repr,
    }
    return cast(
        "type[RecordedDependencyError]", type(cls.__name__, (cls, RecordedDependencyError), namespace)
    )


class RaiseAs:
    """A validated ``raise_as`` mapping, resolved against the recorded failure types of one trace.

    Args:
        mapping: ``{recorded type name: exception class or factory}``; keys qualified
            (``app.errors.RateLimited``) or short (``RateLimited``), see the module docstring.
        recorded_types: the error types recorded in the trace (to resolve each once, and to find
            ambiguities before the run).

    Raises:
        ValueError: ``mapping`` is not a mapping, a key is not a non-empty string, a value is neither an
            exception class nor a callable, a class is not an ``Exception`` subclass (``KeyboardInterrupt``,
            ``SystemExit``, ``BaseException``: see the module docstring), or a recorded type is covered by
            two keys by its last component alone (``a.X`` and ``b.X`` for a recorded ``X``).
    """

    def __init__(self, mapping: Mapping[str, RaiseAsTarget], recorded_types: Iterable[str]) -> None:
        if not isinstance(mapping, Mapping):
            raise ValueError(
                f"raise_as must be a mapping of type names to exception classes, not {mapping!r}"
            )
        self._entries: dict[str, _Entry] = {}
        for key, target in mapping.items():
            if not isinstance(key, str) or not key.strip():
                raise ValueError(f"raise_as keys must be recorded type names, got {key!r}")
            if isinstance(target, type) and not issubclass(target, BaseException):
                raise ValueError(f"raise_as[{key!r}] must be an exception class or a factory, not {target!r}")
            if isinstance(target, type) and not issubclass(target, Exception):
                raise ValueError(f"raise_as[{key!r}] {_base_exception_reason(target)}")
            if not callable(target):
                raise ValueError(f"raise_as[{key!r}] must be an exception class or a factory, not {target!r}")
            entry = _Entry(key, target)
            if entry.problem is not None:
                entry.warn(
                    "fallback",
                    f"{entry.describe()} cannot be combined with RecordedDependencyError "
                    f"({entry.problem}); its recorded failures are raised as {target.__qualname__}(message) "
                    "with the RecordedDependencyError as __cause__. Give a factory to build it yourself",
                )
            self._entries[key] = entry
        self._resolved: dict[str, _Entry | None] = {}
        for recorded in set(recorded_types):
            self._resolved[recorded] = self._resolve(recorded)

    def _resolve(self, recorded: str) -> _Entry | None:
        key = matching_key(self._entries, recorded)
        return None if key is None else self._entries[key]

    def convert(self, error: RecordedDependencyError) -> BaseException:
        """The exception to raise for ``error`` (the module docstring's rules); ``error`` when no entry
        matches its ``error_type``. Never raises for a type among ``recorded_types`` (ambiguities were
        refused then) but a KeyboardInterrupt (the user's Ctrl-C while the user's class or factory ran);
        a failing entry gives ``error`` with a note and a RaiseAsWarning.
        """
        recorded = error.error_type
        entry = self._resolved[recorded] if recorded in self._resolved else self._resolve(recorded)
        if entry is None:
            return error
        if entry.combined is not None:
            try:
                return _instantiate(entry.combined, error)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                entry.problem = f"{type(exc).__name__}: {exc}"
                entry.combined = None  # same failure next time: take the fallback directly
        target = entry.target
        if isinstance(target, type):
            try:
                raised: object = target(error.message)
            except KeyboardInterrupt:
                raise  # the user's Ctrl-C, not the class's failure
            except BaseException as exc:
                return _unconverted(
                    error, entry, f"{target.__qualname__}(message) raised {type(exc).__name__}"
                )
            if isinstance(raised, Exception):
                entry.warn(
                    "fallback",
                    f"{entry.describe()} cannot be combined with RecordedDependencyError ({entry.problem}); "
                    f"raised {target.__qualname__}(message) with the RecordedDependencyError as __cause__",
                )
        else:
            try:
                raised = target(error)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                return _unconverted(error, entry, f"the factory raised {type(exc).__name__}: {exc}")
        if raised is error:
            return error
        if isinstance(raised, BaseException) and not isinstance(raised, Exception):
            return _unconverted(
                error, entry, f"it returned {type(raised).__name__}, a BaseException that is not an Exception"
            )
        if not isinstance(raised, Exception):
            return _unconverted(error, entry, f"it returned {type(raised).__name__}, not an exception")
        raised.__cause__ = error
        return raised


def _instantiate(
    combined: type[RecordedDependencyError],
    error: RecordedDependencyError,
    how: str = "raised through raise_as",
) -> BaseException:
    instance = cast("RecordedDependencyError", _builtin_new(combined)(combined, error.message))
    for field in _FIELDS:
        # AttributeError: the user's class has a read-only property of that name; it keeps its own
        with contextlib.suppress(AttributeError):
            setattr(instance, field, getattr(error, field))
    instance.args = (error.message,)
    instance.add_note(
        "stepfork replay: "
        + recorded_failure_text(error.kind, error.name, error.error_type, error.message)
        + f" ({how}; also a RecordedDependencyError)"
    )
    return instance


def combined_instance(cls: type[Exception], error: RecordedDependencyError, how: str) -> BaseException | None:
    """``error`` as an instance of a subclass of ``(cls, RecordedDependencyError)`` named like ``cls``,
    built as the module docstring says for a class (``str()`` the recorded message, the recorded fields
    as attributes, a note ``stepfork replay: ... (<how>; also a RecordedDependencyError)``); None when
    ``cls`` cannot be combined or built that way. Raises only KeyboardInterrupt."""
    try:
        return _instantiate(_combine(cls), error, how)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return None


def _unconverted(error: RecordedDependencyError, entry: _Entry, reason: str) -> RecordedDependencyError:
    message = f"{entry.describe()} could not build the exception ({reason}); raised RecordedDependencyError"
    error.add_note(f"stepfork replay: {message}")
    entry.warn(reason, message)
    return error


def builtin_exception(error_type: str) -> type[Exception] | None:
    """Python's builtin exception class named ``error_type`` (``TimeoutError`` or ``builtins.TimeoutError``),
    or None (another name, or a builtin that is not an Exception subclass: KeyboardInterrupt...)."""
    name = error_type.removeprefix("builtins.")
    if not name.isidentifier():
        return None
    found = getattr(builtins, name, None)
    return found if isinstance(found, type) and issubclass(found, Exception) else None
