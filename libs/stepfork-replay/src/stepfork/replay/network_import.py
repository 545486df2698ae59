"""The network seal around the import of a replay's entrypoint (issue 29; docs/replay.md "The seal's rules").

A replay imports the user's entrypoint module before its session starts (``replay -e``, a ``check``
worker or its zygote, an exported test, ``minimize``, ``fork``). A module that fetches its configuration
at import (``CONFIG = requests.get(...).json()``) or opens a connection there would reach the network
outside any session. So :func:`sealed_import` seals the network while the module is imported, as the
session will be, and keeps every refusal: the replays that run an entrypoint of that module in this
process take them as their divergence (:func:`carry_import_refusals`, called by
:func:`stepfork.replay.entrypoint.call_with_arguments` inside the session), so the verdict is DIVERGED,
``network_sealed``, naming the host and saying it happened while the module was imported. A module
cached from an earlier import in the process carries its refusals to every later replay the same way.

The frozen-mode guards go up with it: an MCP client session the module or the agent makes is served
from the recording or refused by name (:func:`stepfork.trace._after_import.capture_mcp_sessions`).
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

from stepfork.replay.errors import ReplayPolicyError
from stepfork.replay.network import Seal, seal, unseal

_refused: dict[str, list[ReplayPolicyError]] = {}
"""Module name -> the connections refused while it was imported under the seal (in order)."""
_modules: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""Entrypoint callable -> the module it was resolved from, for the modules in :data:`_refused`."""
_strong: dict[int, tuple[Any, str]] = {}
"""The same for callables that cannot be weakly referenced (kept alive: a handful per process)."""


class ImportGuard:
    """What the seal records a refusal on while an entrypoint's module is imported: the stand-in for a
    session (``mode``, ``_diverge``, ``note_telemetry_refused``, :attr:`seal_context` for the message).

    Attributes:
        module: the module being imported. mode: the replay mode that will follow. refusals: the
            ``network_sealed`` errors raised, in order. telemetry: ``host:port`` of the telemetry
            collectors refused (not divergences, as in a session).
    """

    def __init__(self, module: str, mode: str) -> None:
        self.module = module
        self.mode = mode
        self.seal_context = f"while the entrypoint's module {module!r} was imported"
        self.refusals: list[ReplayPolicyError] = []
        self.telemetry: list[str] = []
        self.children: list[str] = []

    def _diverge(self, error: ReplayPolicyError) -> ReplayPolicyError:
        self.refusals.append(error)
        return error

    def note_telemetry_refused(self, where: str) -> None:
        """Note a telemetry collector refused during the import (never a divergence)."""
        self.telemetry.append(where)

    def note_unsealed_child(self, program: str) -> None:
        """Note a child process the import started that ``allow_commands`` let run unsealed (kept, not
        reported)."""
        self.children.append(program)


@contextlib.contextmanager
def sealed_import(
    module: str,
    *,
    network: str | None,
    allow_hosts: Iterable[str] = (),
    mode: str = "frozen",
    allow_commands: Iterable[str] = (),
) -> Iterator[ImportGuard | None]:
    """Seal the network while the block imports ``module`` when ``network`` is ``"sealed"`` (the policy
    of the replay that follows: :func:`stepfork.replay.network.network_for`), letting ``allow_hosts``
    through and ``allow_commands`` start; yield the :class:`ImportGuard` (None when not sealed). Every mode
    but ``live`` also installs the frozen-mode guards (module docstring). The refusals are kept for
    ``module`` when the block ends.

    Raises:
        ValueError: a malformed ``allow_hosts`` or ``allow_commands`` entry.
    """
    if mode != "live":
        from stepfork.trace._after_import import capture_mcp_sessions

        capture_mcp_sessions()
    if network != "sealed":
        yield None
        return
    guard = ImportGuard(module, mode)
    handle: Seal = seal(guard, allow_hosts, allow_commands)
    try:
        yield guard
    finally:
        unseal(handle)
        if guard.refusals:
            _refused.setdefault(module, []).extend(guard.refusals)


def remember(function: Any, module: str) -> None:
    """Note that ``function`` was resolved from ``module``, whose import refusals it carries."""
    if module not in _refused:
        return
    try:
        _modules[function] = module
    except TypeError:  # not weakly referenceable (a builtin, a bound method of a slotted class)
        _strong[id(function)] = (function, module)


def refusals_of(function: Any) -> tuple[ReplayPolicyError, ...]:
    """The connections refused while the module ``function`` was resolved from was imported (empty when
    none were, or it was not resolved by a sealed :func:`stepfork.replay.entrypoint.resolve_entrypoint`)."""
    if not _refused:
        return ()
    try:
        module = _modules.get(function)
    except TypeError:
        module = None
    if module is None:
        held = _strong.get(id(function))
        module = held[1] if held is not None and held[0] is function else None
    return tuple(_refused.get(module, ())) if module is not None else ()


def refused_during(module: str) -> tuple[ReplayPolicyError, ...]:
    """The connections refused while ``module`` was imported under the seal, in order."""
    return tuple(_refused.get(module, ()))


def carry_import_refusals(function: Any) -> None:
    """Record each connection refused while ``function``'s module was imported as the divergence of every
    sealed replay session active in this process (the session about to run ``function``)."""
    errors = refusals_of(function)
    if not errors:
        return
    from stepfork.replay import network, network_seals

    here = os.getpid()
    with network_seals._lock:  # read from its module: a forked child replaces it
        sessions = [
            s.session
            for s in network_seals._seals
            if s.pid == here and s.session is not None and not network._importing(s)
        ]
    for session in sessions:
        diverge = getattr(session, "_diverge", None)
        if diverge is not None:
            for error in errors:
                diverge(error)


class RefusedImport:
    """The entrypoint of a module whose import failed after the seal refused a connection (a module-level
    ``socket.create_connection`` without a ``try``): calling it raises that refusal, inside the replay,
    so the verdict is the refusal's (DIVERGED, ``network_sealed``), not "cannot import"."""

    def __init__(self, spec: str, error: ReplayPolicyError) -> None:
        self.spec = spec
        self.error = error
        self.__qualname__ = self.__name__ = spec

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ReplayPolicyError(str(self.error), code=self.error.code)
