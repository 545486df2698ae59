"""What the seal does when it refuses (part of :mod:`stepfork.replay.network`): raise the refusal
(``network_sealed``, ``child_process_refused``) and record it on the session it belongs to, as its
divergence while it runs (a late refusal after it ended), or tell the parent process from a forked child
(:mod:`stepfork.replay.network_fork`). A known telemetry collector is refused but only noted (issue 30).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from stepfork.replay import network_fork
from stepfork.replay._seal_hosts import format_host
from stepfork.replay.errors import ReplayPolicyError
from stepfork.replay.network_errors import child_refused_error, sealed_error
from stepfork.replay.network_seals import Seal, _seals, _seals_here
from stepfork.trace.http_calls import is_telemetry_host


def _current_seal() -> tuple[Seal | None, Seal | None]:
    """``(this process's seal a refusal or a note goes to, or None; a seal inherited from the parent by a
    forked child, or None)``: the seal of the session that started the calling thread, else the active
    session's, else (a thread the session's context did not reach) the first session's, else an
    entrypoint's import (:mod:`stepfork.replay.network_import`), else None (the process's own seal,
    :func:`seal_process`, between sessions)."""
    seals = _seals_here()
    if not seals:
        return None, None
    from stepfork.trace import boundary

    active = boundary.active_handler()
    here = os.getpid()
    own = [s for s in seals if s.pid == here]
    current = threading.current_thread()
    seal = next((s for s in own if s.session is not None and current in s.threads), None)
    seal = seal or next((s for s in own if s.session is active and active is not None and not s.ended), None)
    seal = seal or next((s for s in own if s.session is not None and not _importing(s) and not s.ended), None)
    seal = seal or next((s for s in own if s.session is not None and not s.ended), None)
    inherited = next((s for s in seals if s.pid != here and s.session is not None), None)
    return seal, inherited


def _deliver(seal: Seal | None, error: ReplayPolicyError) -> None:
    """Record ``error`` on ``seal``'s session: its divergence while it runs, a late refusal after it ended
    (a thread it started, refused after the verdict: :meth:`ReplaySession.note_late_refusal`)."""
    session = getattr(seal, "session", None)
    if seal is not None and seal.ended:
        note = getattr(session, "note_late_refusal", None)
        if note is not None:
            note(error)
        return
    diverge = getattr(session, "_diverge", None)
    if diverge is not None:
        diverge(error)


def _refuse(host: str, port: Any, what: str = "the connection to") -> None:
    """Raise ``network_sealed`` for ``host:port`` (``what``: the kind of traffic, as ``the reverse lookup
    of``) and record it as the session's divergence; in a child forked during a replay (its sessions are
    the parent's), tell the parent (:func:`_child_refusals`)."""
    if not _seals:
        return
    seal, inherited = _current_seal()
    where = format_host(host, port)
    telemetry = is_telemetry_host(host)
    if seal is None and inherited is not None:
        if not telemetry:
            network_fork.tell_parent({"refused": "network", "where": where, "what": what})
        raise sealed_error(where, getattr(inherited.session, "mode", "frozen"), child=True, what=what)
    session = getattr(seal, "session", None)
    context = getattr(session, "seal_context", None)
    error = sealed_error(where, getattr(session, "mode", "frozen"), context=context, what=what)
    if telemetry:  # refused all the same, but a library's telemetry is not the agent's behaviour
        note = getattr(session, "note_telemetry_refused", None)
        if note is not None and not getattr(seal, "ended", False):
            note(where)
        raise error
    _deliver(seal, error)
    raise error


def _refuse_child(program: str, line: list[str], reason: str) -> None:
    """Raise (and record, as :func:`_refuse` does) ``child_process_refused`` for the child process
    ``program`` (its command ``line``) about to start, refused for ``reason``
    (:func:`stepfork.replay._seal_commands.child_refusal`)."""
    # both None: the process's own seal, between sessions: refused all the same, recorded nowhere
    seal, inherited = _current_seal()
    if seal is None and inherited is not None:
        network_fork.tell_parent({"refused": "command", "program": program, "reason": reason})
        mode = getattr(inherited.session, "mode", "frozen")
        raise child_refused_error(program, line, reason, mode, child=True)
    session = getattr(seal, "session", None)
    mode = getattr(session, "mode", "frozen")
    error = child_refused_error(program, line, reason, mode, context=getattr(session, "seal_context", None))
    _deliver(seal, error)
    raise error


def _refuse_unseen(description: str) -> None:
    """Raise (and record, as :func:`_refuse` does) ``network_sealed`` for network traffic whose destination
    the seal cannot see (``description``: ``looking up libc's connect() through ctypes``)."""
    seal, inherited = _current_seal()
    session = getattr(seal or inherited, "session", None)
    how = "a child process forked during the replay: " if seal is None and inherited is not None else ""
    context = getattr(session, "seal_context", None)
    error = ReplayPolicyError(
        f"network sealed during {getattr(session, 'mode', 'frozen')} replay: {how}"
        f"{f'{context}: ' if context else ''}{description} was refused: the seal cannot see where such a "
        "call goes. Make the call through Python's socket module (its connections are checked against "
        "allow_hosts), serve it from the recording (@trace_tool around the function that makes it), or "
        "replay with network='open' (--allow-network)",
        code="network_sealed",
    )
    if seal is None and inherited is not None:
        network_fork.tell_parent({"refused": "unseen", "where": description})
        raise error
    _deliver(seal, error)
    raise error


def _importing(seal: Seal) -> bool:
    """True for the seal of an entrypoint's import (:mod:`stepfork.replay.network_import`), which a
    refusal in a thread without context goes to only when no replay session is sealed."""
    return getattr(seal.session, "seal_context", None) is not None
