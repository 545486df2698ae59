"""``minimize_trace``: shrink a failing trace to a 1-minimal set of recorded calls (spec "minimize").

1. The failure signature is detected by replaying the original bundle (in its own process): the qualified
   type of an exception the entrypoint raised; else, with ``expect_output``, ``output_mismatch`` at the
   first differing path; else a replay divergence (its code). No signature: nothing to minimize.
2. Units are the recorded calls (``stepfork.replay.extract_recorded_calls``), each with its outcome
   event and the error events under them, so a call is never split from its result; a call nested (by
   time) in another has it as parent, so a child is never kept without its parent (:mod:`.ddmin`).
3. Each candidate is a valid bundle: the kept events unchanged (payloads, hashes, redactions), parents
   re-pointed to the nearest kept ancestor, written with ``Trace.save``. It is replayed in its own process
   with the timeout: a child forked by a zygote that imported stepfork and the entrypoint once, or, where
   that is not possible, a fresh Python per attempt (:mod:`._attempts`); candidates of one search step run
   in parallel on the available cores; with ``attempts > 1`` a candidate reproduces when any attempt
   shows the signature (intermittent failures).
   Removed calls are absent from the bundle, so the agent meets a replay error at them: a candidate
   reproduces when it shows the *same signature*, whatever else diverged (only a ``divergence``
   signature is compared on divergences).
4. :func:`.ddmin.dd_prefix` searches (memoized); the result is re-verified and saved.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepfork.analysis._render import html_table
from stepfork.analysis._subset import candidate, extract_units
from stepfork.analysis.ddmin import MemoOracle, dd_prefix

__all__ = ["MinimizeError", "MinimizeResult", "Signature", "minimize_trace", "replay_signature"]

_SIGNATURE_NAMES = {
    "exception": "Exception",
    "output_mismatch": "Output Mismatch",
    "divergence": "Divergence",
}


class MinimizeError(Exception):
    """Minimization cannot run or did not succeed.

    Attributes:
        code: ``unreadable_trace``, ``bad_entrypoint``, ``invalid_option``, ``invalid_expectation``,
            ``already_exists`` (exit 2); ``no_failure``, ``not_reproduced``, ``replay_failed`` (exit 1).
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
                "bad_entrypoint",
                "invalid_option",
                "invalid_expectation",
                "already_exists",
            }
            else 1
        )


@dataclass(frozen=True)
class Signature:
    """How a replay failed: ``kind`` (``exception``, ``output_mismatch``, ``divergence``, ``none``,
    ``timeout``, ``crash``) and ``detail`` (exception type, differing path, divergence code)."""

    kind: str
    detail: str | None = None

    def __str__(self) -> str:
        name = _SIGNATURE_NAMES.get(self.kind, self.kind.replace("_", " ").title())
        return f"{name} ({self.detail})" if self.detail and self.kind != "output_mismatch" else name


def replay_signature(
    bundle: str | os.PathLike[str],
    entrypoint: str,
    *,
    mode: str = "frozen",
    import_root: str | None = None,
    expected: Any = None,
    has_expected: bool = False,
) -> Signature:
    """Replay ``bundle`` through ``entrypoint`` in this process and return its :class:`Signature`.

    Uses the public replay API (``ReplaySession``, ``resolve_entrypoint``, ``run_in_session``) rather than
    ``replay_entrypoint``, because a candidate with removed calls diverges and its output must still be
    compared with ``expected``. Order: exception raised, output mismatch, divergence, else ``none``.
    """
    from stepfork.analysis.behavior import first_difference
    from stepfork.replay import ReplayError, ReplaySession, resolve_entrypoint, run_in_session
    from stepfork.trace import Trace, redact_json, to_jsonable

    session = ReplaySession(Trace.load(bundle), mode)
    function = resolve_entrypoint(entrypoint, import_root=import_root)
    result, raised = run_in_session(session, function)
    if raised is not None:
        cls = type(raised)
        qualified = (
            cls.__qualname__
            if cls.__module__ in ("builtins", "__main__")
            else f"{cls.__module__}.{cls.__qualname__}"
        )
        return Signature("exception", qualified)
    if has_expected:
        try:
            actual = redact_json(to_jsonable(result)).value
        except (TypeError, ValueError):
            return Signature("output_mismatch", "$")
        diff = first_difference(expected, actual)
        if diff is not None:
            return Signature("output_mismatch", diff[0])
    if session.divergence is not None:
        return Signature("divergence", getattr(session.divergence, "code", None))
    try:
        session.verify_complete()
    except ReplayError as exc:
        return Signature("divergence", getattr(exc, "code", None))
    return Signature("none")


def _reproduces(original: Signature, candidate: Signature) -> bool:
    return candidate == original


@dataclass(frozen=True)
class MinimizeResult:
    """What minimization found; ``str()`` is the spec's report panel, ``to_dict()`` the JSON form.

    Attributes:
        original, output: bundle paths; agent_name, entrypoint, mode: as given.
        original_events, minimized_events: event counts; replay_attempts: replays run (detection,
            search and verification; each ``--attempts`` repeat counts).
        signature: the failure; minimal: True when the result is 1-minimal; kept_steps: the original
            ``step`` of            each kept call; removed_calls: how many calls were removed.
    """

    original: str
    output: str
    agent_name: str
    entrypoint: str
    mode: str
    original_events: int
    minimized_events: int
    replay_attempts: int
    signature: Signature
    minimal: bool
    kept_steps: tuple[int, ...] = field(default=())
    removed_calls: int = 0

    @property
    def reduction(self) -> float:
        """Share of events removed, in percent (0.0-100.0)."""
        return 0.0 if not self.original_events else 100.0 * (1 - self.minimized_events / self.original_events)

    def rows(self) -> list[tuple[str, str]]:
        """The report panel's rows, in the spec's order."""
        return [
            ("Original Events", str(self.original_events)),
            ("Minimized Events", str(self.minimized_events)),
            ("Reduction", f"{self.reduction:.1f}%"),
            ("Replay Attempts", str(self.replay_attempts)),
            ("Failure Signature", str(self.signature)),
            ("Minimal", "Yes" if self.minimal else "No"),
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON form: paths, counts, reduction, signature ``{kind, detail}``, minimal, kept steps."""
        return {
            "original": self.original,
            "output": self.output,
            "agent_name": self.agent_name,
            "entrypoint": self.entrypoint,
            "mode": self.mode,
            "original_events": self.original_events,
            "minimized_events": self.minimized_events,
            "reduction": round(self.reduction, 1),
            "replay_attempts": self.replay_attempts,
            "signature": {"kind": self.signature.kind, "detail": self.signature.detail},
            "minimal": self.minimal,
            "kept_steps": list(self.kept_steps),
            "removed_calls": self.removed_calls,
        }

    def __str__(self) -> str:
        width = max(len(v) for _, v in self.rows())
        body = [f"│ {k:<19} {v:<{width}} │" for k, v in self.rows()]
        inner = len(body[0]) - 2
        title = "─ Minimization Report "
        return "\n".join(
            [
                f"╭{title}{'─' * (inner - len(title))}╮",
                *body,
                f"╰{'─' * inner}╯",
                "",
                f"✓ Minimized trace saved to: {self.output}",
            ]
        )

    def _repr_html_(self) -> str:
        return html_table(f"Minimization Report: {self.output}", ["", ""], [list(r) for r in self.rows()])


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
) -> MinimizeResult:
    """Minimize the failing bundle ``path`` replayed through ``entrypoint`` (``MODULE:FUNCTION``).

    Args:
        expect_output: JSON file with the expected output; a different output is the failure.
        mode: replay mode of every attempt; output: default ``<path stem>-minimized.sftrace`` beside it.
        timeout: seconds per replay attempt; attempts: repeats per subset (>= 1).
        workers: parallel replays (default: the available cores); import_root: where the entrypoint
            resolves (default: the working directory).
        progress: called as ``progress(stage, replays_so_far)`` with stage ``detect``, ``search``, ``verify``.

    Returns:
        a :class:`MinimizeResult` (the minimized bundle is saved at ``result.output``).

    Raises:
        MinimizeError: see :attr:`MinimizeError.code`; ``exit_code`` is the spec's.
    """
    from stepfork.analysis._attempts import AttemptRunner
    from stepfork.replay import EntrypointError, resolve_entrypoint
    from stepfork.trace import Trace, TraceError, loads_json

    if attempts < 1 or timeout <= 0:
        raise MinimizeError("--attempts must be >= 1 and --timeout > 0", code="invalid_option")
    if mode not in ("frozen", "live", "forbidden", "manual", "derived"):
        raise MinimizeError(f"Invalid replay mode {mode}.", code="invalid_option")
    if mode == "derived":  # the spec lists it, and says it is reserved: refuse it rather than guess
        raise MinimizeError(
            "replay mode 'derived' is reserved and not supported in this version", code="invalid_option"
        )
    source = Path(path)
    try:
        trace = Trace.load(source)
    except (TraceError, OSError) as exc:
        raise MinimizeError(f"unreadable trace: {exc}", code="unreadable_trace") from None
    root = str(Path(import_root if import_root is not None else os.getcwd()).resolve())
    try:
        resolve_entrypoint(entrypoint, import_root=root)
    except EntrypointError as exc:
        raise MinimizeError(f"cannot resolve entrypoint {entrypoint}: {exc}", code="bad_entrypoint") from None
    expected: Any = None
    if expect_output is not None:
        try:
            expected = loads_json(Path(expect_output).read_bytes())
        except (OSError, ValueError) as exc:
            raise MinimizeError(
                f"--expect-output is not valid JSON: {exc}.", code="invalid_expectation"
            ) from None
    target = (
        Path(output)
        if output is not None
        else source.with_name(source.name.removesuffix(".sftrace") + "-minimized.sftrace")
    )
    if target.exists() and not overwrite:
        raise MinimizeError(
            f"{target} already exists; pass --overwrite to replace it.", code="already_exists"
        )

    units = extract_units(trace)
    replays = 0
    lock = threading.Lock()
    attempts_runner = AttemptRunner(
        entrypoint=entrypoint,
        mode=mode,
        import_root=root,
        expected=expected,
        has_expected=expect_output is not None,
        timeout=timeout,
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
                if want is None or _reproduces(want, sig):
                    return sig
            return sig

        if progress:
            progress("detect", replays)
        everything = frozenset(units.ids)
        original = repeat(everything, None)
        if original.kind in ("none", "timeout", "crash"):
            reason = {
                "none": "trace replay completed successfully; no failure to minimize",
                "timeout": f"the replay timed out after {timeout}s",
                "crash": f"the replay process failed: {original.detail}",
            }[original.kind]
            raise MinimizeError(f"Failed to detect original failure signature: {reason}", code="no_failure")
        pool = ThreadPoolExecutor(max_workers=max(1, workers or os.cpu_count() or 1))

        def oracle(subsets: Sequence[frozenset[int]]) -> list[bool]:
            if progress:
                progress("search", replays)
            return [_reproduces(original, s) for s in pool.map(lambda k: repeat(k, original), subsets)]

        try:
            found = dd_prefix(
                units.ids,
                MemoOracle(oracle, units.parents),
                parents=units.parents,
                workers=max(1, workers or os.cpu_count() or 1),
            )
        except BaseException:
            attempts_runner.close()  # kills the attempts in flight, so the pool's threads return at once
            raise
        finally:
            pool.shutdown(cancel_futures=True)
        keep = frozenset(found.units)
        if progress:
            progress("verify", replays)
        if not _reproduces(original, repeat(keep, original)):
            raise MinimizeError(
                "Minimized trace does not reproduce the original failure", code="not_reproduced"
            )
    minimized = candidate(trace, units, keep)
    minimized.save(target, overwrite=overwrite)
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
        minimal=found.minimal,
        kept_steps=tuple(units.steps[u] for u in sorted(keep)),
        removed_calls=len(units.ids) - len(keep),
    )
