"""``fork``: run an agent again from a step of a recorded run, live from there on (issue 5, "fork").

Calls recorded before step N are served frozen by a ``stepfork.replay.ReplaySession`` (matching checked as
in frozen replay); from the first call at step >= N every call runs live: LLM calls through the user's own
client (only the labels in ``live_llms`` when any are given), tools only when named in
``allow_live_tools`` -- any other call raises ``ReplayPolicyError`` before its body runs. ``overrides``
replace the recorded output of calls before the fork point ("what if this tool had returned X").

The whole run is recorded into OUT with ``stepfork.trace.record`` (a normal schema 0.1 bundle). Its
lineage -- parent bundle, fork step, overrides -- goes into an extra file ``fork.json`` listed in
``integrity.json`` (DESIGN.md, "Bundle I/O": extensions go into extra files listed there, never new keys;
readers ignore extra names). The module is ``forking`` because ``stepfork.analysis.fork`` is the function.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from stepfork.analysis.forking._handler import ForkHandler
from stepfork.analysis.forking._result import ForkResult

__all__ = ["FORK_FILE", "ForkError", "ForkResult", "fork", "read_fork_info"]

FORK_FILE = "fork.json"


class ForkError(Exception):
    """The fork cannot run (exit 2): ``code`` is ``unreadable_trace``, ``integrity_mismatch`` (the
    bundle does not match its integrity.json; the message is TraceIntegrityError's line), ``invalid_step``,
    ``invalid_override``, ``bad_entrypoint``, ``already_exists``, ``invalid_option`` or ``record_failed``
    (the forked run could not be recorded at all)."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


def _write_fork_file(bundle: Path, info: dict[str, Any]) -> None:
    """Write ``fork.json`` and list its digest in ``integrity.json`` (both via temp file + rename)."""
    data = (json.dumps(info, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    _atomic(bundle / FORK_FILE, data)
    integrity_path = bundle / "integrity.json"
    record = json.loads(integrity_path.read_text(encoding="utf-8"))
    record["files"][FORK_FILE] = hashlib.sha256(data).hexdigest()
    _atomic(integrity_path, (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def _atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_fork_info(bundle: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Return the lineage of a forked bundle (``fork.json``), None when it is not a fork.

    Raises:
        ValueError: ``fork.json`` does not match the digest listed in ``integrity.json``.
    """
    path = Path(bundle) / FORK_FILE
    if not path.is_file():
        return None
    data = path.read_bytes()
    listed = json.loads((Path(bundle) / "integrity.json").read_text(encoding="utf-8"))["files"].get(FORK_FILE)
    if listed != hashlib.sha256(data).hexdigest():
        raise ValueError(f"{path}: digest does not match integrity.json")
    return json.loads(data)  # type: ignore[no-any-return]


def _check_live_llms(live_llms: Iterable[str], trace: Any) -> None:
    """ForkError ``invalid_option`` when a ``--live-llm`` label is not the label of an LLM call of
    ``trace``: with labels given, every other LLM call after the fork point is refused, so a typo would
    refuse them all and write a failed run (``_shared.labels``, as ``export --mode hybrid`` checks them)."""
    from stepfork.analysis._shared.labels import live_llm_problem

    problem = live_llm_problem(live_llms, trace)
    if problem is not None:
        raise ForkError(problem, code="invalid_option")


def fork(
    path: str | os.PathLike[str],
    *,
    step: int,
    entrypoint: str | Callable[..., Any],
    output: str | os.PathLike[str],
    live_llms: Iterable[str] = (),
    allow_live_tools: Iterable[str] = (),
    overrides: Mapping[int, Any] | None = None,
    import_root: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    ordering: str = "auto",
    network: str | None = None,
    allow_hosts: Iterable[str] | None = None,
    allow_commands: Iterable[str] | None = None,
) -> ForkResult:
    """Fork the run recorded at ``path`` at ``step`` and record the new run into ``output``.

    Args:
        step: the ``step`` of an event of the bundle (as ``inspect`` shows it); calls recorded before it
            are frozen, every call from it on runs live.
        entrypoint: ``MODULE:FUNCTION`` (or a callable) run with no arguments.
        live_llms: LLM labels (``provider/model`` or ``model``) allowed live; empty: every LLM. Each must be
            the label of an LLM call of the recording (else ForkError ``invalid_option``, naming them).
        allow_live_tools: tool names whose bodies may run after the fork point.
        overrides: ``{step: JSON value}``: the recorded output of the call at ``step`` (its call or
            result event) before the fork point is replaced by the value.
        ordering: the replay ordering of the frozen part (``stepfork.replay.ordering``; default ``auto``).
        network: ``"sealed"`` (None, the default) seals the network while the run is frozen, as a frozen
            replay does (an uninstrumented outbound connection before the fork point raises
            ReplayPolicyError ``network_sealed``); the seal lifts at the fork point, where the run goes
            live. ``"open"`` (``--allow-network``) never seals it.
        allow_hosts: hosts reachable while sealed (``--allow-host``).
        allow_commands: programs the frozen part may start unsealed (``--allow-command``; names or paths,
            as :class:`~stepfork.replay.ReplaySession` takes them): any other child process the seal cannot
            reach before the fork point raises ``ChildProcessRefusedError`` (``child_process_refused``).

    Returns:
        a :class:`ForkResult`; the bundle at ``output`` holds ``fork.json`` (see the module doc).

    Raises:
        ForkError: invalid input (see its codes); nothing is run then.
    """
    from stepfork.replay import EntrypointError, ReplaySession, call_entrypoint, resolve_entrypoint
    from stepfork.replay.entrypoint import recorded_run_input
    from stepfork.trace import (
        TraceError,
        TraceIntegrityError,
        load_verified_trace,
        record,
        redact_json,
        to_jsonable,
    )
    from stepfork.trace.boundary import using_handler

    live_llms, allow_live_tools = tuple(live_llms), tuple(allow_live_tools)
    source = Path(path)
    try:
        trace = load_verified_trace(source)
    except TraceIntegrityError as exc:  # the one integrity line of every command, as is
        raise ForkError(str(exc), code="integrity_mismatch") from None
    except (TraceError, OSError) as exc:
        raise ForkError(f"unreadable trace: {exc}", code="unreadable_trace") from None
    steps = {e.step for e in trace.events}
    if step not in steps:
        known = f"steps {min(steps)}..{max(steps)}" if steps else "it has no events"
        raise ForkError(f"step {step} is not a step of {source} ({known})", code="invalid_step")
    target = Path(output)
    from stepfork.trace._outputs import bundle_output_problem, overlap_problem

    problem = overlap_problem(source, target, command="fork") or bundle_output_problem(target)
    if problem is not None:  # never over its parent recording, never inside a bundle, even with --overwrite
        raise ForkError(problem, code="invalid_option")
    if target.exists() and not overwrite:
        raise ForkError(f"{target} already exists; pass --overwrite to replace it.", code="already_exists")
    if target.is_dir() and not target.is_symlink() and any(target.iterdir()):
        from stepfork.trace.bundle import bundle_replace_problem

        problem = bundle_replace_problem(target)  # --overwrite replaces a bundle, never a user's directory
        if problem is not None:
            raise ForkError(problem, code="invalid_option")
    # sealed while frozen, as a frozen replay; the handler lifts the seal at the fork point, where the
    # agent's calls really go out (a fork at the first call is live, and open, from the start)
    try:
        session = ReplaySession(
            trace,
            "frozen",
            ordering=ordering,
            network=network,
            allow_hosts=allow_hosts,
            allow_commands=allow_commands,
        )
    except ValueError as exc:
        raise ForkError(str(exc), code="invalid_option") from None
    _check_live_llms(live_llms, trace)
    frozen = [c for c in session.calls if c.step < step]
    if not frozen:
        session.network = "open"
    policy = session.network  # the frozen part's (a fork at the first call has none: open)
    by_step: dict[int, int] = {}
    for call in frozen:
        by_step[call.step] = call.index
        if call.end_position is not None:
            by_step[trace.events[call.end_position].step] = call.index
    resolved: dict[int, Any] = {}
    for override_step, value in (overrides or {}).items():
        if override_step not in by_step:
            raise ForkError(
                f"--override {override_step}: not the step of a call recorded before step {step}",
                code="invalid_override",
            )
        resolved[by_step[override_step]] = redact_json(to_jsonable(value)).value
    try:
        function = (
            resolve_entrypoint(
                entrypoint,
                import_root=import_root,
                network=session.network,
                allow_hosts=allow_hosts,
                allow_commands=session.allow_commands,
            )
            if isinstance(entrypoint, str)
            else entrypoint
        )
    except EntrypointError as exc:
        raise ForkError(f"Unable to resolve entrypoint. {exc}", code="bad_entrypoint") from None

    run_start = next((e for e in trace.events if str(getattr(e.type, "value", e.type)) == "run_start"), None)
    recorder = record(
        trace.agent_name, output=target, overwrite=overwrite, run_input=getattr(run_start, "input", None)
    )
    handler = ForkHandler(
        session, recorder, len(frozen), resolved, frozenset(live_llms), frozenset(allow_live_tools)
    )
    error: str | None = None
    result: Any = None
    try:
        with recorder:
            with session, using_handler(handler):
                result = call_entrypoint(function, recorded_run_input(trace))
            recorder.set_output(result)
    except Exception as exc:
        error = redact_json(f"{type(exc).__name__}: {exc}").value
    if not (target / "integrity.json").is_file():
        # the recording never produced a bundle (the run input of a damaged bundle cannot be recorded,
        # say): there is no forked run to describe (found by the reliability soak)
        raise ForkError(f"the forked run could not be recorded: {error}", code="record_failed")
    _write_fork_file(
        target,
        {
            "format": "stepfork-fork",
            "version": 1,
            "parent": {"path": str(source), "run_id": trace.run_id, "agent_name": trace.agent_name},
            "fork_step": step,
            "frozen_calls": len(frozen),
            "overrides": [{"step": s, "output": resolved[by_step[s]]} for s in sorted(overrides or {})],
            "live_llms": sorted(live_llms),
            "allow_live_tools": sorted(allow_live_tools),
            "network": session.network,
            "allow_hosts": sorted(allow_hosts or ()),
            "allow_commands": list(session.allow_commands),
        },
    )
    safe_result = None if error else redact_json(to_jsonable(result)).value
    return ForkResult(
        str(source),
        str(target),
        step,
        len(frozen),
        handler.live_calls,
        tuple(sorted(overrides or {})),
        "failed" if error else "completed",
        error,
        safe_result,
        policy,
        session.allow_hosts,
        session.allow_commands,
    )
