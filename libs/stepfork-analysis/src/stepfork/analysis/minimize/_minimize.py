"""``minimize_trace``: shrink a failing trace to a 1-minimal set of recorded calls (spec "minimize").

1. The failure signature is detected by replaying the original bundle (in its own process,
   :mod:`._signature`): the qualified type of an exception the entrypoint raised, or, with
   ``expect_output``, ``output_mismatch`` at the first differing path; beside it, how the replay went (its
   divergences, the calls left unconsumed). A Stepfork replay error (policy, mismatch, divergence) is
   never a failure: without an exception or a mismatch of the agent's own there is nothing to minimize;
   nor is a failure after the seal refused a connection or a child process (``SEAL_CODES``, even one the
   agent caught): it is the seal's doing (:func:`._signature.no_failure_reason` says which option helps).
2. Units are the recorded calls (``stepfork.replay.extract_recorded_calls``), each with its outcome
   event and the error events under them, so a call is never split from its result; a call nested (by
   time) in another has it as parent, so a child is never kept without its parent (:mod:`.ddmin`).
3. Each candidate is a valid bundle: the kept events unchanged (payloads, hashes, redactions), parents
   re-pointed to the nearest kept ancestor, written with ``Trace.save``. It is replayed in its own process
   with the timeout: a child forked by a zygote that imported stepfork and the entrypoint once, or, where
   that is not possible, a fresh Python per attempt (:mod:`._attempts`); candidates of one search step run
   in parallel on the available cores; with ``attempts > 1`` a candidate reproduces when any attempt
   shows the signature (intermittent failures).
   By default (the spec: "the smallest set of events that preserves the original failure") a candidate
   reproduces when it shows the same failure, whatever divergences its removed calls cause: a removed
   call the agent still makes fails at its call site with a replay error the agent may handle. With
   ``clean_replay`` it must also replay as the original did (no divergence but the original's, no call
   left unconsumed unless the original left some), so the saved bundle replays as the original does.
4. Default: :func:`.ddmin.dd_prefix` searches all calls (memoized). ``clean_replay``: every call the agent
   makes must stay, so the calls the original replay consumed are tested first, and when they reproduce
   only the 1-minimality pass is left; otherwise ``dd_prefix``. The result is replayed once more, must
   reproduce the same way, and is saved; that last replay says whether the bundle replays cleanly.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from stepfork.analysis.minimize._result import MinimizeResult
from stepfork.analysis.minimize._signature import SEAL_CODES, Signature, no_failure_reason, replay_signature
from stepfork.analysis.minimize._subset import candidate, extract_units
from stepfork.analysis.minimize.ddmin import MemoOracle, closure, dd_prefix, one_minimal

__all__ = [
    "MinimizeError",
    "MinimizeResult",
    "Signature",
    "check_options",
    "minimize_trace",
    "replay_signature",
]

MODES = ("frozen", "live")
"""Replay modes ``minimize`` accepts (docs/decisions.md); the spec's other modes are refused below."""

_REFUSED_MODES = {
    "forbidden": "replay mode 'forbidden' refuses every dependency call, so no replay can show a failure "
    "of the agent; minimize accepts --mode frozen or live",
    "manual": "replay mode 'manual' needs your approval of every call, and minimize replays candidates "
    "unattended; minimize accepts --mode frozen or live",
    "derived": "replay mode 'derived' is reserved and not supported in this version",
}


class MinimizeError(Exception):
    """Minimization cannot run or did not succeed.

    Attributes:
        code: ``unreadable_trace``, ``integrity_mismatch`` (the bundle does not match its integrity.json;
            the message is TraceIntegrityError's line), ``bad_entrypoint``, ``invalid_option`` (also a
            refused mode, and an output that is not a ``.sftrace`` path or overlaps the input),
            ``invalid_expectation``, ``already_exists`` (exit 2); ``no_failure`` (the original replay
            shows no failure of the agent), ``not_reproduced``, ``replay_failed`` (exit 1).
        exit_code: 2 or 1 as the spec's exit codes say.
    """

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code

    @property
    def exit_code(self) -> int:
        """2 for invalid input, unreadable trace or unresolvable entrypoint; 1 otherwise (spec)."""
        return (
            2
            if self.code
            in {
                "unreadable_trace",
                "integrity_mismatch",
                "bad_entrypoint",
                "invalid_option",
                "invalid_expectation",
                "already_exists",
            }
            else 1
        )


def _reproduces(original: Signature, candidate: Signature, *, clean_replay: bool) -> bool:
    """The same failure of the agent; with ``clean_replay``, also a replay that went as the original's."""
    return original.same_failure(candidate) and (not clean_replay or original.replays_like(candidate))


def _check_mode(mode: str) -> None:
    """Raise ``MinimizeError(code="invalid_option")`` unless ``mode`` is one of :data:`MODES`."""
    if mode in _REFUSED_MODES:
        raise MinimizeError(_REFUSED_MODES[mode], code="invalid_option")
    if mode not in MODES:
        raise MinimizeError(f"Invalid replay mode {mode}.", code="invalid_option")


def check_options(
    path: str | os.PathLike[str],
    *,
    mode: str = "frozen",
    output: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    timeout: float = 30.0,
    attempts: int = 1,
    ordering: str = "auto",
    network: str | None = None,
) -> Path:
    """Check :func:`minimize_trace`'s options (its arguments of the same names) without reading the bundle
    ``path`` or replaying anything, and return where the minimized bundle goes. ``minimize_trace`` calls it
    first; the CLI calls it before printing its header, so a refused option is one line and nothing else.

    Raises:
        MinimizeError: ``invalid_option`` for ``attempts`` < 1 or ``timeout`` <= 0, a mode outside
            :data:`MODES` (the spec's other modes with their reason), a bad ordering or network, an output
            that is not a ``.sftrace`` path or overlaps the input; ``already_exists`` for an existing
            output without ``overwrite``.
    """
    if attempts < 1 or timeout <= 0:
        raise MinimizeError("--attempts must be >= 1 and --timeout > 0", code="invalid_option")
    _check_mode(mode)
    from stepfork.replay.network import network_for
    from stepfork.replay.ordering import normalize_ordering

    try:
        normalize_ordering(ordering)
        network_for(mode, network)
    except ValueError as exc:
        raise MinimizeError(str(exc), code="invalid_option") from None
    return _target(Path(path), output, overwrite)


def _target(source: Path, output: str | os.PathLike[str] | None, overwrite: bool) -> Path:
    """Where the minimized bundle goes, checked before any replay (so a bad path never wastes a search).

    Raises:
        MinimizeError: ``invalid_option`` when the path is not a ``.sftrace`` directory path, or is the
            input bundle, inside it or around it (resolved: ``..`` and symlinks followed), even with
            ``overwrite``, or is a non-empty directory that is not a bundle (never replaced);
            ``already_exists`` when it exists and ``overwrite`` is False.
    """
    target = (
        Path(output)
        if output is not None
        else source.with_name(source.name.removesuffix(".sftrace") + "-minimized.sftrace")
    )
    if not target.name.endswith(".sftrace") or target.name == ".sftrace":
        raise MinimizeError(f"--output must be a .sftrace bundle path: {target}", code="invalid_option")
    from stepfork.trace._outputs import bundle_output_problem, overlap_problem

    problem = overlap_problem(source, target, command="minimize") or bundle_output_problem(target)
    if problem is not None:
        raise MinimizeError(problem, code="invalid_option")
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise MinimizeError(f"--output {target} exists and is not a bundle directory", code="invalid_option")
    if target.exists() and not overwrite:
        raise MinimizeError(
            f"{target} already exists; pass --overwrite to replace it.", code="already_exists"
        )
    if target.exists() and any(target.iterdir()):
        from stepfork.trace.bundle import bundle_replace_problem

        problem = bundle_replace_problem(target)  # --overwrite replaces a bundle, never a user's directory
        if problem is not None:
            raise MinimizeError(problem, code="invalid_option")
    return target


def minimize_trace(
    path: str | os.PathLike[str],
    entrypoint: str,
    *,
    expect_output: str | os.PathLike[str] | None = None,
    mode: str = "frozen",
    output: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    timeout: float = 30.0,
    attempts: int = 1,
    workers: int | None = None,
    import_root: str | os.PathLike[str] | None = None,
    progress: Callable[[str, int], None] | None = None,
    clean_replay: bool = False,
    ordering: str = "auto",
    network: str | None = None,
    allow_hosts: Iterable[str] | None = None,
    allow_commands: Iterable[str] | None = None,
) -> MinimizeResult:
    """Minimize the failing bundle ``path`` replayed through ``entrypoint`` (``MODULE:FUNCTION``).

    Args:
        expect_output: JSON file with the expected output; a different output is the failure.
        mode: replay mode of every attempt, ``frozen`` or ``live`` (:data:`MODES`); output: a ``.sftrace``
            path, default ``<path stem>-minimized.sftrace`` beside it, never the input itself.
        timeout: seconds per replay attempt; attempts: repeats per subset (>= 1).
        workers: parallel replays (default: the available cores); import_root: where the entrypoint
            resolves (default: the working directory).
        progress: called as ``progress(stage, replays_so_far)`` with stage ``detect``, ``search``, ``verify``.
        clean_replay: count a candidate only when its replay also went as the original's did (no
            divergence but the original's), so the saved bundle replays as the original does; default
            False: the same failure suffices, as the spec says (docs/minimize.md, docs/decisions.md).
        ordering: the replay ordering of every attempt (``stepfork.replay.ordering``; default ``auto``).
        network, allow_hosts: the network policy of every attempt, as :class:`ReplaySession` takes them
            (None: sealed in ``frozen`` mode, so an uninstrumented outbound connection fails with
            ``network_sealed``; ``"open"`` is ``--allow-network``).
        allow_commands: the programs every attempt may start unsealed (``--allow-command``; names or paths,
            as :class:`ReplaySession` takes them); without them a sealed attempt refuses a child process
            the seal cannot reach (``child_process_refused``), and an original replay that met such a
            refusal is not a failure of the agent: MinimizeError ``no_failure`` says so.

    Returns:
        a :class:`MinimizeResult` (the minimized bundle is saved at ``result.output``); its
        ``replays_cleanly`` and ``Clean Replay`` row say how the saved bundle replays.

    Raises:
        MinimizeError: see :attr:`MinimizeError.code`; ``exit_code`` is the spec's. Options, mode and
            output are checked before any replay (a malformed ``allow_commands`` entry is
            ``invalid_option``).
    """
    from stepfork.analysis._shared.expectation import read_expect_output
    from stepfork.analysis.minimize._attempts import AttemptRunner
    from stepfork.replay import EntrypointError, resolve_entrypoint
    from stepfork.replay.network import network_for, parse_allowed_command
    from stepfork.trace import TraceError, TraceIntegrityError, load_verified_trace

    source = Path(path)
    target = check_options(
        source,
        mode=mode,
        output=output,
        overwrite=overwrite,
        timeout=timeout,
        attempts=attempts,
        ordering=ordering,
        network=network,
    )
    try:
        commands = list(dict.fromkeys(parse_allowed_command(c) for c in allow_commands or ()))
    except ValueError as exc:
        raise MinimizeError(str(exc), code="invalid_option") from None
    try:
        trace = load_verified_trace(source)
    except TraceIntegrityError as exc:  # the one integrity line of every command, as is
        raise MinimizeError(str(exc), code="integrity_mismatch") from None
    except (TraceError, OSError) as exc:
        raise MinimizeError(f"unreadable trace: {exc}", code="unreadable_trace") from None
    root = str(Path(import_root if import_root is not None else os.getcwd()).resolve())
    try:
        # sealed as every attempt's replay: its module's import reaches nothing either
        policy = network_for(mode, network)
        resolve_entrypoint(
            entrypoint,
            import_root=root,
            network=policy,
            allow_hosts=allow_hosts,
            mode=mode,
            allow_commands=commands,
        )
    except EntrypointError as exc:
        raise MinimizeError(f"cannot resolve entrypoint {entrypoint}: {exc}", code="bad_entrypoint") from None
    expected: Any = None
    if expect_output is not None:
        try:
            expected = read_expect_output(expect_output)
        except ValueError as exc:
            raise MinimizeError(str(exc), code="invalid_expectation") from None

    units = extract_units(trace)
    unit_of = {trace.events[p].id: u for u, positions in units.events_of.items() for p in positions}
    replays = 0
    lock = threading.Lock()
    width = max(1, workers or os.cpu_count() or 1)
    attempts_runner = AttemptRunner(
        entrypoint=entrypoint,
        mode=mode,
        import_root=root,
        expected=expected,
        has_expected=expect_output is not None,
        timeout=timeout,
        ordering=ordering,
        network=network,
        allow_hosts=sorted(set(allow_hosts or ())),
        allow_commands=commands,
    )
    with tempfile.TemporaryDirectory(prefix="stepfork-minimize-") as tmp, attempts_runner:
        counter = iter(range(10**9))

        def run(keep: frozenset[int]) -> Signature:
            bundle = Path(tmp) / f"candidate-{next(counter)}.sftrace"
            candidate(trace, units, keep).save(bundle)
            return attempts_runner.run(bundle)

        def repeat(keep: frozenset[int], want: Signature | None) -> Signature:
            nonlocal replays
            sig = Signature("none")
            for _ in range(attempts):
                with lock:
                    replays += 1
                sig = run(keep)
                if want is None or _reproduces(want, sig, clean_replay=clean_replay):
                    return sig
            return sig

        if progress:
            progress("detect", replays)
        everything = frozenset(units.ids)
        original = repeat(everything, None)
        if not original.is_failure or original.divergence in SEAL_CODES:
            reason = no_failure_reason(original, timeout)
            raise MinimizeError(f"Failed to detect original failure signature: {reason}", code="no_failure")
        pool = ThreadPoolExecutor(max_workers=width)

        def oracle(subsets: Sequence[frozenset[int]]) -> list[bool]:
            if progress:
                progress("search", replays)
            answers = pool.map(lambda k: repeat(k, original), subsets)
            return [_reproduces(original, s, clean_replay=clean_replay) for s in answers]

        memo = MemoOracle(oracle, units.parents)
        memo.cache[everything] = True
        # For a clean replay every call the agent makes must stay (a removed one diverges), so the calls
        # the original replay consumed are the natural answer: test them first, then prove 1-minimality.
        # By default a removed call may fail where it is made, so that answer is rarely minimal: search.
        reached = closure((unit_of[i] for i in original.reached if i in unit_of), units.parents)
        try:
            if clean_replay and memo.one(reached):
                keep, minimal = frozenset(one_minimal(sorted(reached), memo, units.parents)), True
            else:
                found = dd_prefix(units.ids, memo, parents=units.parents, workers=width)
                keep, minimal = frozenset(found.units), found.minimal
        except BaseException:
            attempts_runner.close()  # kills the attempts in flight, so the pool's threads return at once
            raise
        finally:
            pool.shutdown(cancel_futures=True)
        if progress:
            progress("verify", replays)
        final = repeat(keep, original)
        if not _reproduces(original, final, clean_replay=clean_replay):
            left = f", {final.pending} recorded calls left unconsumed" if final.pending else ""
            raise MinimizeError(
                f"Minimized trace does not reproduce the original failure (its replay: {final}{left})",
                code="not_reproduced",
            )
    minimized = candidate(trace, units, keep)
    try:
        minimized.save(target, overwrite=overwrite)
    except TraceError as exc:  # the target changed while minimize ran
        code = "already_exists" if getattr(exc, "code", None) == "already_exists" else "invalid_option"
        raise MinimizeError(f"cannot save {target}: {exc}", code=code) from None
    return MinimizeResult(
        original=str(source),
        output=str(target),
        agent_name=trace.agent_name,
        entrypoint=entrypoint,
        mode=mode,
        original_events=len(trace.events),
        minimized_events=len(minimized.events),
        replay_attempts=replays,
        signature=original,
        minimal=minimal,
        kept_steps=tuple(units.steps[u] for u in sorted(keep)),
        removed_calls=len(units.ids) - len(keep),
        removed=tuple(
            f"step {units.steps[u]}: {units.labels.get(u, '?')}" for u in units.ids if u not in keep
        ),
        clean_replay=clean_replay,
        replay=final,
        network=policy,
        allow_hosts=tuple(sorted(set(allow_hosts or ()))),
        allow_commands=tuple(commands),
    )
