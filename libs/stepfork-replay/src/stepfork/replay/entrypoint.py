"""Resolve a trusted ``MODULE:FUNCTION`` entrypoint (spec replay.txt, "CLI": "--entrypoint is a trusted
MODULE:FUNCTION resolved against the current working directory. Only that callable is imported and run.").

The entrypoint is named by the user, never read from a bundle: a trace is data and nothing named in it is
ever imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any


class EntrypointError(ValueError):
    """An entrypoint cannot be resolved.

    Attributes:
        code: ``bad_form`` (not ``MODULE:FUNCTION``), ``import_failed`` (the module cannot be imported),
            ``missing_attribute`` (no such attribute), ``not_callable``.
        spec: the entrypoint as given.
    """

    def __init__(self, message: str, *, code: str, spec: str) -> None:
        super().__init__(message)
        self.code = code
        self.spec = spec


class EntrypointCallError(EntrypointError):
    """The entrypoint cannot be called with the recorded run input: a required parameter gets no value
    from it (code ``missing_argument``). Raised before the replay starts: the check could not execute,
    which is neither a pass nor a caught regression (spec "run").

    Attributes:
        parameters: the names of the required parameters left without a value, in signature order.
    """

    def __init__(self, message: str, *, spec: str, parameters: tuple[str, ...]) -> None:
        super().__init__(message, code="missing_argument", spec=spec)
        self.parameters = parameters


class EntrypointImportExit(EntrypointError):
    """The entrypoint's module runs as a script when imported (a script without a ``__main__`` guard): it
    ended the process (``sys.exit()``, ``raise SystemExit``, ``os._exit()`` at import) or started a
    recording (``record(...)`` at module level, refused during a replay: ``BoundaryContextError`` code
    ``record_during_replay``); code ``import_failed``. Not a verdict on the agent: the check cannot run
    (``stepfork run``: could_not_execute)."""


def resolve_entrypoint(
    spec: str,
    *,
    import_root: str | os.PathLike[str] | None = None,
    network: str | None = None,
    allow_hosts: Iterable[str] | None = None,
    mode: str = "frozen",
    allow_commands: Iterable[str] | None = None,
) -> Callable[..., Any]:
    """Import ``MODULE`` and return its attribute ``FUNCTION`` (dotted attributes allowed: ``mod:Cls.run``).

    Args:
        spec: ``"package.module:function"``.
        import_root: directory put first on ``sys.path`` (default: the current working directory); it stays
            there so the agent's own lazy imports keep working.
        network, allow_hosts, mode, allow_commands: the network policy of the replay that will run the
            entrypoint (``"sealed"`` or ``"open"``, as :class:`~stepfork.replay.session.ReplaySession`
            resolves it), its mode and the programs it lets start. ``"sealed"`` imports the module under
            the network seal (:mod:`stepfork.replay.network_import`): a connection the import makes is
            refused, and it is the divergence of the replays that call the entrypoint
            (:func:`call_with_arguments`). None (default): the import runs as any import.

    Returns:
        The callable. When a sealed import failed because of a refused connection, a stand-in that
        raises that refusal when called (the replay is DIVERGED, ``network_sealed``, not unresolvable).

    Raises:
        EntrypointError: with ``code`` ``bad_form`` ("expected the form MODULE:FUNCTION"),
            ``import_failed`` ("cannot import module ..."; :class:`EntrypointImportExit` when the import
            exited or started a recording), ``missing_attribute`` ("no attribute ..."), ``not_callable``.
        ValueError: a malformed ``allow_hosts`` or ``allow_commands`` entry.
    """
    module_name, sep, attribute = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if (
        not sep
        or not module_name
        or not attribute
        or not all(part.isidentifier() for part in module_name.split("."))
        or not all(part.isidentifier() for part in attribute.split("."))
    ):
        raise EntrypointError(
            f"expected the form MODULE:FUNCTION (for example mypkg.agent:run), got {spec!r}",
            code="bad_form",
            spec=str(spec),
        )
    root = str(Path(import_root if import_root is not None else os.getcwd()).resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    seal: AbstractContextManager[Any] = contextlib.nullcontext()
    if network is not None or mode != "frozen":
        from stepfork.replay.network_import import sealed_import

        seal = sealed_import(
            module_name,
            network=network,
            allow_hosts=allow_hosts or (),
            mode=mode,
            allow_commands=allow_commands or (),
        )
    from stepfork.trace.boundary import preparing_replay
    from stepfork.trace.errors import BoundaryContextError

    try:
        # a replay is being prepared: a recording the import starts is refused (stepfork.trace.recording)
        with seal, _os_exit_refused(), preparing_replay():
            module = importlib.import_module(module_name)
    except _ExitCalled as exc:
        # os._exit at import ends the process at once: no report, the script's status (0 for os._exit(0))
        raise EntrypointImportExit(
            f"cannot import module {module_name!r} from {root}: "
            f"importing it called os._exit({exc.status!r}); a module that runs as a script when imported "
            "needs its script part under `if __name__ == '__main__':`",
            code="import_failed",
            spec=spec,
        ) from None
    except SystemExit as exc:
        # a script without an `if __name__ == "__main__":` guard: an exit at import is not a verdict (it
        # would end replay with the script's status, 0 for a plain sys.exit(), and no report at all)
        raise EntrypointImportExit(
            f"cannot import module {module_name!r} from {root}: "
            f"importing it exited (SystemExit({exc.code!r})); a module that runs as a script when imported "
            "needs its script part under `if __name__ == '__main__':`",
            code="import_failed",
            spec=spec,
        ) from exc
    except Exception as exc:
        if isinstance(exc, BoundaryContextError) and exc.code == "record_during_replay":
            # the module records a run when imported: a script without a __main__ guard, as above
            raise EntrypointImportExit(
                f"cannot import module {module_name!r} from {root}: {exc}", code="import_failed", spec=spec
            ) from None
        refused = _refused_import(spec, module_name) if network == "sealed" else None
        if refused is not None:  # the seal's refusal broke the import: the replay's verdict, not ours
            return refused
        raise EntrypointError(
            f"cannot import module {module_name!r} from {root}: {type(exc).__name__}: {exc}",
            code="import_failed",
            spec=spec,
        ) from exc
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise EntrypointError(
                f"module {module_name!r} has no attribute {attribute!r}{_suggestion(target, part)}",
                code="missing_attribute",
                spec=spec,
            ) from None
    if not callable(target):
        raise EntrypointError(f"{spec!r} is not callable", code="not_callable", spec=spec)
    if network == "sealed":
        from stepfork.replay.network_import import remember

        remember(target, module_name)
    return target  # type: ignore[no-any-return]


def _refused_import(spec: str, module_name: str) -> Callable[..., Any] | None:
    """The stand-in entrypoint of a module whose sealed import failed after a refused connection
    (:class:`~stepfork.replay.network_import.RefusedImport`, remembered with the refusals), or None when
    no connection was refused while it was imported."""
    from stepfork.replay.network_import import RefusedImport, refused_during, remember

    refusals = refused_during(module_name)
    if not refusals:
        return None
    stand_in = RefusedImport(spec, refusals[0])
    remember(stand_in, module_name)
    return stand_in


class _ExitCalled(BaseException):
    """``os._exit(status)`` called by the importing thread while an entrypoint module was imported."""

    def __init__(self, status: object) -> None:
        super().__init__(status)
        self.status = status


@contextlib.contextmanager
def _os_exit_refused() -> Iterator[None]:
    """While the block runs, ``os._exit`` called from this thread raises :class:`_ExitCalled` instead of
    ending the process. Other threads (a timeout's watchdog), a process the import forked, and any call
    after the block (a module that kept ``from os import _exit``) reach the real ``os._exit``."""
    real = os._exit
    thread = threading.get_ident()
    pid = os.getpid()
    active = True

    def refuse(status: int) -> None:
        # a child forked by the import (multiprocessing's fork start method ends it with os._exit) exits
        if active and threading.get_ident() == thread and os.getpid() == pid:
            raise _ExitCalled(status)
        real(status)

    setattr(os, "_exit", refuse)  # noqa: B010 - mypy refuses assigning to a module's function
    try:
        yield
    finally:
        active = False
        if os._exit is refuse:
            setattr(os, "_exit", real)  # noqa: B010


def _suggestion(target: Any, name: str) -> str:
    """``; did you mean 'run_agent'?`` when ``target`` has public attributes close to ``name`` (difflib's
    ``get_close_matches``, case-insensitive), else the empty string."""
    import difflib

    names = [attr for attr in dir(target) if not attr.startswith("_")]
    by_folded = {attr.casefold(): attr for attr in names}
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=3, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(by_folded[item]) for item in close) + "?"


def recorded_run_input(trace: Any) -> Any:
    """The ``run_input`` a trace recorded: the ``input`` of its ``run_start`` event (redacted, in its JSON
    form with tagged values), or None when it has no ``run_start`` or recorded none."""
    for event in trace.events:
        if getattr(event, "type", None) == "run_start":
            return getattr(event, "input", None)
    return None


def entrypoint_arguments(
    function: Callable[..., Any], run_input: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The ``(args, kwargs)`` an entrypoint is called with, given the recorded ``run_input`` (issue 13;
    docs/replay.md, "Entrypoints"). One rule for replay, export, minimize, fork and run:

    1. ``run_input`` None (nothing recorded), or ``function`` takes no parameters: no arguments.
    2. ``run_input`` is a JSON object whose keys ``function``'s parameters accept (``inspect.Signature.bind``
       succeeds, so every required parameter is among them): keyword arguments.
    3. ``function`` takes exactly one parameter, positional: ``run_input`` as that argument.
    4. Otherwise no arguments.

    When the arguments so derived leave a required parameter without a value (rules 1 and 4), the
    entrypoint cannot be called with the recorded run input: :class:`EntrypointCallError` names the
    parameter, before anything runs (the check could not execute; it is not the agent failing).

    Values are decoded with ``from_jsonable`` and validated into the parameter's annotation when it has one
    that resolves (a ``Request`` model parameter gets a ``Request``; a dataclass pydantic cannot validate,
    such as LangGraph's ``Command``, is built from the decoded fields); when that fails the decoded JSON
    value is passed, so the agent, not Stepfork, reports the problem. Nothing named in the bundle is imported.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: called as before
        return (), {}
    params = list(signature.parameters.values())
    if run_input is None or not params:
        _check_callable_without_arguments(function, signature, run_input)
        return (), {}
    hints = _annotations(function)
    if isinstance(run_input, dict) and not _is_tagged(run_input):
        try:
            signature.bind(**run_input)
        except TypeError:
            pass
        else:
            return (), {name: _decode(value, hints.get(name)) for name, value in run_input.items()}
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(params) == 1 and params[0].kind in positional:
        return (_decode(run_input, hints.get(params[0].name)),), {}
    _check_callable_without_arguments(function, signature, run_input)
    return (), {}


def _check_callable_without_arguments(function: Callable[..., Any], signature: Any, run_input: Any) -> None:
    """Raise :class:`EntrypointCallError` when ``function`` has a required parameter, naming the ones the
    recorded ``run_input`` gives no value for (its missing keys when it is an object)."""
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if not required:
        return
    if isinstance(run_input, dict) and not _is_tagged(run_input):
        missing = [name for name in required if name not in run_input] or required
        keys = ", ".join(sorted(map(str, run_input))) or "none"
        recorded = f"the recorded run input is an object with the keys: {keys}"
    elif run_input is None:
        missing, recorded = required, "the run recorded no run input"
    else:
        missing = required[1:] or required
        recorded = f"the recorded run input is one {type(run_input).__name__} value"
    names = ", ".join(repr(name) for name in missing)
    what = f"parameter {names} is" if len(missing) == 1 else f"parameters {names} are"
    name = getattr(function, "__qualname__", None) or repr(function)
    raise EntrypointCallError(
        f"the entrypoint {name} cannot be called with the recorded run input: {what} missing ({recorded})",
        spec=name,
        parameters=tuple(missing),
    )


def _is_tagged(value: dict[str, Any]) -> bool:
    from stepfork.trace.jsonable import TAG

    return TAG in value


def _annotations(function: Callable[..., Any]) -> dict[str, Any]:
    """The resolved parameter annotations of ``function``; {} when they cannot be resolved."""
    import typing

    try:
        return typing.get_type_hints(function)
    except Exception:  # a forward reference that does not resolve: decode without annotations
        return {}


def _decode(value: Any, annotation: Any) -> Any:
    from stepfork.trace.jsonable import from_jsonable

    if annotation is not None:
        with contextlib.suppress(Exception):  # else the agent gets the JSON value and reports the mismatch
            return from_jsonable(value, annotation)
    decoded = from_jsonable(value)
    built = _dataclass_from_fields(decoded, annotation)
    return decoded if built is None else built


def _dataclass_from_fields(decoded: Any, annotation: Any) -> Any:
    """``annotation(**decoded)`` when ``annotation`` is a dataclass that pydantic cannot build a schema for
    (LangGraph's ``Command``: its ``goto`` names ``Send``) and ``decoded`` is an object of its init fields;
    else None. The class is the one the entrypoint's own annotation names, never one named by the bundle
    (docs/decisions.md, "the resumed run's input")."""
    import dataclasses

    if not (isinstance(annotation, type) and dataclasses.is_dataclass(annotation)):
        return None
    if not isinstance(decoded, dict):
        return None
    names = {f.name for f in dataclasses.fields(annotation) if f.init}
    if not set(decoded) <= names:
        return None
    try:
        return annotation(**decoded)
    except Exception:  # the agent gets the JSON value and reports the mismatch
        return None


def call_entrypoint(function: Callable[..., Any], run_input: Any = None) -> Any:
    """Call ``function`` with the arguments :func:`entrypoint_arguments` derives from ``run_input`` (none
    when it is None); an ``async def`` (or a returned awaitable) runs with ``asyncio.run`` (spec
    replay.txt: the exporter and the CLI accept async entrypoints).

    Raises:
        EntrypointCallError: a required parameter gets no value from ``run_input`` (before the call).
    """
    args, kwargs = entrypoint_arguments(function, run_input)
    return call_with_arguments(function, args, kwargs)


def call_with_arguments(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call ``function(*args, **kwargs)`` (arguments from :func:`entrypoint_arguments`); an ``async def``
    (or a returned awaitable) runs with ``asyncio.run``. Returns what it returns; raises what it raises.

    A connection refused while ``function``'s module was imported under the seal
    (:func:`resolve_entrypoint` with ``network="sealed"``) is first recorded as the divergence of the
    sealed replay sessions active in this process
    (:func:`stepfork.replay.network_import.carry_import_refusals`).

    A process ``function`` forks that returns or raises out of it ends there, never returning into the
    caller (:func:`stepfork.replay.forked_child.child_ends_here`: no second replay report)."""
    from stepfork.replay.forked_child import child_ends_here

    imports = sys.modules.get("stepfork.replay.network_import")
    if imports is not None:
        imports.carry_import_refusals(function)
    with child_ends_here():
        if inspect.iscoroutinefunction(function):
            return asyncio.run(function(*args, **kwargs))
        result = function(*args, **kwargs)
        if inspect.isawaitable(result):
            return asyncio.run(_await(result))
        return result


def run_in_session(
    session: AbstractContextManager[Any], function: Callable[..., Any], run_input: Any = None
) -> tuple[Any, BaseException | None]:
    """Call ``function`` (as :func:`call_entrypoint`, with ``run_input``) inside ``session`` (a
    ``ReplaySession``) and return ``(result, None)``, or ``(None, exc)`` when it raised anything but
    ``KeyboardInterrupt``.

    The exception is caught inside the ``with`` so the session closes as after a normal return: a replay
    report (spec replay.txt, "CLI") judges an entrypoint that raised; it does not abort. That includes
    BaseExceptions that are not Exceptions (``SystemExit`` from an agent's ``sys.exit()``,
    ``asyncio.CancelledError``, a class of the agent's own), which would otherwise end the caller with a
    traceback or a silent exit status (docs/decisions.md). ``KeyboardInterrupt`` propagates: it is the
    user's Ctrl-C, and the session sees it.

    Raises:
        EntrypointCallError: a required parameter gets no value from ``run_input`` (before the session
            is entered: nothing was replayed).
        KeyboardInterrupt: raised by ``function`` (or delivered while it ran).
    """
    args, kwargs = entrypoint_arguments(function, run_input)
    with session:
        try:
            return call_with_arguments(function, args, kwargs), None
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            return None, exc


async def _await(awaitable: Any) -> Any:
    return await awaitable
