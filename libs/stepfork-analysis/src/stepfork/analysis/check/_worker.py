"""One replay of ``stepfork check``: the verdict of one bundle, computed where the replay ran.

:func:`verdict_of` runs in a child forked by check's zygote (:mod:`._zygote`), or in a
fresh ``python -m stepfork.analysis.check._worker`` (the fallback, as for ``minimize``), or in this process
(the benchmark's in-process baseline). All three give the same verdict for the same bundle. The verdicts are
those of ``stepfork replay`` (``replay_entrypoint``): the behaviour status when the replay exits 0
(``MATCHED``, ``REPRODUCED FAILURE``, ``NOT RECORDED``, ``UNVERIFIABLE``), ``DIVERGED`` when it exits 1,
and ``COULD NOT EXECUTE`` with a reason (``receipt.REASONS``) when it could not run.

Protocol of the fallback: the job ``{**config, "bundle": PATH}`` as JSON on stdin, one line
``STEPFORK-VERDICT <json>`` on stdout.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from typing import Any

VERDICT_LINE = "STEPFORK-VERDICT "


def _first_divergence(outcome: Any) -> tuple[str | None, str, int | None]:
    """``(code, one-line message, step)`` of what made a replay exit 1: the replay error (divergence or
    unconsumed calls) when there is one, else the behaviour difference."""
    matching = outcome.matching
    if matching.status != "COMPLETE":
        step = getattr(matching.diagnostic, "step", None)
        message = (matching.message or matching.status).splitlines()[0]
        return matching.code, message, step if isinstance(step, int) else None
    return "behavior_mismatch", outcome.behavior.message, None


def could_not_execute(reason: str, detail: str, **extra: Any) -> dict[str, Any]:
    """The verdict of a bundle whose replay could not run: ``reason`` (one of ``receipt.REASONS``) and
    one line of ``detail``."""
    return {
        "kind": "verdict",
        "verdict": "COULD NOT EXECUTE",
        "outcome": "could_not_execute",
        "reason": reason,
        "detail": detail.splitlines()[0][:300] if detail else reason,
        "code": None,
        "step": None,
        **extra,
    }


# The key of a verdict that says the entrypoint or a ``raise_as`` class cannot be resolved in the process that
# replays (its value the EntrypointError's code): the same verdict for every bundle there, no bundle read or
# replayed
UNRESOLVABLE = "entrypoint_error"


def resolve_targets(config: dict[str, Any]) -> tuple[Any, Any]:
    """Import what a check's configuration names, before any bundle is read: ``(function, raise_as)``, the
    entrypoint (``config["entrypoint"]``) and the ``raise_as`` mapping with its ``"MODULE:CLASS"`` values
    imported (or None), both from ``config["import_root"]``.

    Raises:
        EntrypointError: the entrypoint cannot be resolved; RaiseAsClassError (an EntrypointError): a
        ``raise_as`` class cannot (``stepfork.replay.raise_as.resolve_raise_as``), or it resolves to what
        ``RaiseAs`` refuses for every bundle alike (not an ``Exception`` subclass: code ``unusable``).
    """
    from stepfork.replay.entrypoint import EntrypointError, resolve_entrypoint
    from stepfork.replay.network import seal_process
    from stepfork.replay.raise_as import RaiseAsClassError, resolve_raise_as

    root = config.get("import_root")
    # a check process only replays frozen and sealed: sealed for good before the agent's module is imported,
    # whose refusals are then every bundle's divergence (stepfork.replay.network_import)
    seal_process()
    commands = config.get("allow_commands") or ()
    function = resolve_entrypoint(
        config["entrypoint"], import_root=root, network="sealed", allow_commands=commands
    )
    raise_as = resolve_raise_as(config.get("raise_as") or None, import_root=root)
    for key, target in (raise_as or {}).items():
        why = _unusable(key, target)
        if why is not None:
            spec = str(config["raise_as"][key])
            raise RaiseAsClassError(key, EntrypointError(why, code="unusable", spec=spec))
    return function, raise_as


def _unusable(key: str, target: Any) -> str | None:
    """Why ``RaiseAs`` refuses ``target`` for ``key`` whatever the bundle (not an ``Exception`` subclass...),
    or None: refused once here, as replay refuses it before its run, not once per bundle. Its warnings are
    each replay's to give."""
    from stepfork.replay.raise_as import RaiseAs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            RaiseAs({key: target}, ())
        except ValueError as exc:
            return str(exc).removeprefix(f"raise_as[{key!r}] ")
    return None


def entrypoint_unresolvable(exc: Any) -> dict[str, Any]:
    """The verdict of every bundle replayed where :func:`resolve_targets` fails (``exc``, an
    ``EntrypointError``: a module cannot be imported, has no such attribute, the attribute is not
    callable, or the name is not ``MODULE:FUNCTION``): ``COULD NOT EXECUTE``, reason
    ``entrypoint_unresolvable`` (``raise_as_unresolvable`` with ``raise_as_key``, the recorded type name,
    for a ``RaiseAsClassError``), the redacted message as detail, and :data:`UNRESOLVABLE` set to its
    code."""
    from stepfork.replay.raise_as import RaiseAsClassError
    from stepfork.trace.redaction import redact_text

    extra = {UNRESOLVABLE: str(getattr(exc, "code", ""))}
    if isinstance(exc, RaiseAsClassError):
        return could_not_execute(
            "raise_as_unresolvable", redact_text(str(exc)), raise_as_key=exc.key, **extra
        )
    return could_not_execute("entrypoint_unresolvable", redact_text(str(exc)), **extra)


def verdict_of(config: dict[str, Any], bundle: str, targets: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """Replay ``bundle`` frozen through ``config["entrypoint"]`` in this process and return its verdict.

    Args:
        config: ``entrypoint`` (MODULE:FUNCTION), ``import_root`` (directory or None), ``ordering``
            (``strict``/``relaxed``/... as ``ReplaySession``), ``raise_as`` (``{TYPE: "MODULE:CLASS"}`` or
            None), ``allow_commands`` (the programs the sealed replay lets start, as ``ReplaySession``;
            absent or empty: none).
        bundle: a bundle path (or a URL the trace reader accepts).
        targets: :func:`resolve_targets`'s ``(function, raise_as)`` for this ``config``, resolved once by
            the caller (a batch worker: about 0.16M instructions per bundle, a fifth of ``check``'s own
            per-bundle work); None (default) resolves them here, per call.

    Returns:
        ``{"kind": "verdict", "verdict", "outcome" (passed | failed | could_not_execute), "reason",
        "detail", "code", "step", "agent_name", "run_id", "replay_ms"}``: JSON, so it crosses a pipe.
        Setup errors (unreadable bundle, unresolvable entrypoint or ``raise_as`` class, bad option) are a
        ``could_not_execute`` verdict, never raised; BaseExceptions (KeyboardInterrupt) propagate. The
        entrypoint and the ``raise_as`` classes are resolved before the bundle is read
        (:func:`resolve_targets`): when one cannot be, the verdict is :func:`entrypoint_unresolvable`'s,
        whatever the bundle.
    """
    from stepfork.replay.entrypoint import EntrypointError
    from stepfork.replay.outcome import replay_entrypoint
    from stepfork.trace.errors import TraceError
    from stepfork.trace.redaction import redact_text

    start = time.perf_counter()
    try:
        # first, before the bundle is read: an entrypoint or raise_as class that cannot be resolved fails
        # every bundle alike
        function, raise_as = resolve_targets(config) if targets is None else targets
    except EntrypointError as exc:
        return entrypoint_unresolvable(exc)
    try:
        outcome = replay_entrypoint(
            bundle,
            function,
            mode="frozen",
            import_root=config.get("import_root"),
            ordering=config.get("ordering") or "strict",
            raise_as=raise_as,
            allow_commands=config.get("allow_commands") or None,
        )
    except EntrypointError as exc:  # it cannot be called with this bundle's run input (missing_argument)
        return could_not_execute("entrypoint_unresolvable", redact_text(str(exc)))
    except (TraceError, OSError) as exc:
        code = getattr(exc, "code", type(exc).__name__)
        return could_not_execute("bundle_unreadable", f"{code}: {redact_text(str(exc))}")
    except Exception as exc:  # a bad option (ValueError) or a bug: this bundle could not be checked
        return could_not_execute("check_error", f"{type(exc).__name__}: {redact_text(str(exc))}")
    replay_ms = round((time.perf_counter() - start) * 1000, 3)
    common = {
        "kind": "verdict",
        "agent_name": outcome.agent_name,
        "run_id": outcome.run_id,
        "replay_ms": replay_ms,
    }
    if outcome.exit_code == 0:
        return {
            **common,
            "verdict": outcome.behavior.status,
            "outcome": "passed",
            "reason": None,
            "detail": outcome.behavior.message,
            "code": None,
            "step": None,
        }
    code, message, step = _first_divergence(outcome)
    if outcome.exit_code == 2:  # a stored fingerprint that does not match its payload: rejected
        return could_not_execute("bundle_unreadable", f"{code}: {message}", **common)
    return {
        **common,
        "verdict": "DIVERGED",
        "outcome": "failed",
        "reason": None,
        "detail": message,
        "code": code,
        "step": step,
    }


def main() -> None:
    """Replay the bundle named on stdin and print its verdict line."""
    job = json.loads(sys.stdin.read())
    verdict = verdict_of(job, job["bundle"])
    sys.stdout.write(VERDICT_LINE + json.dumps(verdict) + "\n")


if __name__ == "__main__":
    main()
